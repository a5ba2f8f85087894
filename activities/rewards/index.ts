import { nativePool } from '../../db/pool.ts';
import {
  adjustPoints, nextDueAt, processDue, recordAward, reevaluateTier, reverseOrderPoints,
  type AwardResult,
} from '../../domain/rewards/ledger.ts';
import { applyOrderEvent } from '../../domain/rewards/service.ts';
import type { ActivityDeps } from '../../platform/area.ts';
import type {
  AdjustmentRequest, AwardRequest, LedgerEntryView, LoyaltyRef, OrderEventInput, ReversalRequest, TierChangeView,
} from '../../workflows/rewards/shared.ts';
import { REWARDS_AREA } from '../../workflows/rewards/shared.ts';

export type RewardsActivityDeps = Pick<ActivityDeps, 'orm' | 'temporal' | 'taskQueue'>;

const scopeOf = (r: LoyaltyRef) => ({ accountId: r.accountId, livemode: r.livemode });

/**
 * The loyalty workflows' steps, each one SQL transaction that is idempotent under retry: a grant
 * is keyed by its id (and by order and reason), a reversal by the cumulative share it reverses,
 * timed work by the state it finds.
 */
export function createRewardsActivities({ orm, temporal, taskQueue }: RewardsActivityDeps) {
  const pool = () => nativePool(orm);
  return {
    async recordAward(input: LoyaltyRef & AwardRequest): Promise<AwardResult> {
      return recordAward(await pool(), { ...input, source: input.source });
    },
    async reversePoints(input: LoyaltyRef & ReversalRequest): Promise<{ entries: LedgerEntryView[]; nextDueAt: number | null }> {
      return reverseOrderPoints(await pool(), input);
    },
    async adjustPoints(input: LoyaltyRef & AdjustmentRequest): Promise<{ entry: LedgerEntryView; nextDueAt: number | null }> {
      return adjustPoints(await pool(), input);
    },
    async reevaluateTier(input: LoyaltyRef & { at: number }): Promise<{ change: TierChangeView | null; nextDueAt: number | null }> {
      return reevaluateTier(await pool(), scopeOf(input), input.customerId, input.at);
    },
    async processDue(input: LoyaltyRef & { now: number }): Promise<{ processed: number; nextDueAt: number | null }> {
      return processDue(await pool(), scopeOf(input), input.customerId, input.now);
    },
    async nextDue(input: LoyaltyRef): Promise<{ nextDueAt: number | null }> {
      return { nextDueAt: await nextDueAt(await pool(), scopeOf(input), input.customerId) };
    },
    async applyOrderEvent(input: OrderEventInput): Promise<string> {
      return applyOrderEvent(await pool(), { client: temporal, taskQueue: taskQueue(REWARDS_AREA) }, input);
    },
  };
}

export type RewardsActivities = ReturnType<typeof createRewardsActivities>;
