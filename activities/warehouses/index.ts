import type { MikroORM } from '@mikro-orm/postgresql';
import { Context } from '@temporalio/activity';
import {
  approveCycleCountRow, closeCycleCountRow, createCycleCountRow, markCycleCountOverdue, recordCountLines,
} from '../../domain/warehouses/cycle-counts.ts';
import type { CycleCountView, TransferView } from '../../domain/warehouses/schemas.ts';
import {
  cancelTransferRow, createTransferRow, dispatchTransferRow, markTransferDelayed, receiveTransferRow,
} from '../../domain/warehouses/transfers.ts';
import { scopedEm, type Scope } from '../../domain/scope.ts';
import type {
  Actor, ApproveInput, CancelInput, CloseInput, CycleCountDraft, CycleCountRef, ReceiveInput, RecordCountsInput, TransferDraft, TransferRef,
} from '../../workflows/warehouses/shared.ts';

const scopeOf = (r: { accountId: string; livemode: boolean }): Scope => ({ accountId: r.accountId, livemode: r.livemode });

/**
 * Activities of the warehouses area: each changes a transfer or a count and the stock in one
 * transaction under the row's lock, idempotent under retry. Refusals (4xx) are made non-retryable
 * by the workers' interceptor (worker/activity-refusals.ts).
 */
export function createWarehouseActivities({ orm }: { orm: MikroORM }) {
  const em = (r: { accountId: string; livemode: boolean }) => scopedEm(orm, scopeOf(r));
  return withHeartbeats({
    async createTransfer(draft: TransferDraft): Promise<TransferView> {
      return createTransferRow(em(draft), scopeOf(draft), draft);
    },
    async dispatchTransfer(input: TransferRef & Actor): Promise<TransferView> {
      return dispatchTransferRow(em(input), scopeOf(input), input.transferId, { actor: input.actor, requestId: input.requestId });
    },
    async receiveTransfer(input: TransferRef & ReceiveInput): Promise<TransferView> {
      return receiveTransferRow(em(input), scopeOf(input), input.transferId, input);
    },
    async cancelTransfer(input: TransferRef & CancelInput): Promise<TransferView> {
      return cancelTransferRow(em(input), scopeOf(input), input.transferId, input);
    },
    async markTransferDelayed(ref: TransferRef): Promise<TransferView> {
      return markTransferDelayed(em(ref), scopeOf(ref), ref.transferId);
    },
    async createCycleCount(draft: CycleCountDraft): Promise<CycleCountView> {
      return createCycleCountRow(em(draft), scopeOf(draft), draft);
    },
    async recordCycleCounts(input: CycleCountRef & RecordCountsInput): Promise<CycleCountView> {
      return recordCountLines(em(input), scopeOf(input), input.countId, input.counts, { actor: input.actor, requestId: input.requestId });
    },
    async approveCycleCount(input: CycleCountRef & ApproveInput): Promise<CycleCountView> {
      return approveCycleCountRow(em(input), scopeOf(input), input.countId, input);
    },
    async closeCycleCount(input: CycleCountRef & CloseInput): Promise<CycleCountView> {
      return closeCycleCountRow(em(input), scopeOf(input), input.countId, input);
    },
    async markCycleCountOverdue(ref: CycleCountRef): Promise<CycleCountView> {
      return markCycleCountOverdue(em(ref), scopeOf(ref), ref.countId);
    },
  });
}

/** Each activity heartbeats every second while it runs (see DB_STEPS). */
function withHeartbeats<T extends Record<string, (arg: never) => Promise<unknown>>>(activities: T): T {
  const wrapped: Record<string, (arg: never) => Promise<unknown>> = {};
  for (const [name, fn] of Object.entries(activities)) {
    wrapped[name] = async (arg) => {
      const ctx = Context.current();
      const timer = setInterval(() => ctx.heartbeat(), 1000);
      try {
        ctx.heartbeat();
        return await fn(arg);
      } finally {
        clearInterval(timer);
      }
    };
  }
  return wrapped as T;
}

export type WarehouseActivities = ReturnType<typeof createWarehouseActivities>;
