import type { EntityManager } from '@mikro-orm/postgresql';
import { Context } from '@temporalio/activity';
import { nativePool } from '../../db/pool.ts';
import type { ActivityDeps } from '../../platform/area.ts';
import { GatewayRejectedError, gatewayMerchant, type GatewayName } from '../../domain/payments/gateways/types.ts';
import {
  DuplicatePaymentError, completeCharge, completeRefund, failPayment, failRefund, finishSplit, getPayment, getRefund, getTransfer, markTransferReversed,
  paymentForRefund, recordPayment, recordTransferResult, reserveRefund,
} from '../../domain/payments/service.ts';
import { savedCardRouting } from '../../domain/payments/routing.ts';
import type { PaymentRouting } from '../../domain/payments/schemas.ts';
import { scopedEm, type Scope } from '../../domain/scope.ts';
import {
  gatewayKeys, paymentWorkflowId, refundWorkflowId,
  type PaymentView, type PaymentWorkflowInput, type RefundOutcome, type RefundView, type RefundWorkflowInput, type TransferView,
} from '../../workflows/payments/shared.ts';
import { REFUSALS, refuse } from '../../workflows/kit/failures.ts';

export type PaymentActivityDeps = Pick<ActivityDeps, 'orm' | 'paymentGateways'>;

export interface PaymentRef {
  paymentId: string;
  accountId: string;
  livemode: boolean;
  requestId: string | null;
}

const scopeOf = (r: { accountId: string; livemode: boolean }): Scope => ({ accountId: r.accountId, livemode: r.livemode });

/**
 * Keeps heartbeating while a gateway call is in flight, so a worker that dies mid-call is noticed
 * within the heartbeat timeout and the call is retried elsewhere (with the same idempotency key).
 * A local activity (the charge's first attempt) has no heartbeat: its workflow task's timeout
 * notices a dead worker.
 */
async function withHeartbeat<T>(work: () => Promise<T>): Promise<T> {
  const ctx = Context.current();
  if (ctx.info.isLocal) return work();
  const timer = setInterval(() => ctx.heartbeat(), 1000);
  try {
    ctx.heartbeat();
    return await work();
  } finally {
    clearInterval(timer);
  }
}

/** Gateway refusals are business answers: not retried. Everything else (outages) is retried. */
function rethrow(err: unknown): never {
  if (err instanceof GatewayRejectedError) {
    throw refuse(REFUSALS.gatewayRejected, err.message, { code: err.code });
  }
  throw err;
}

export function createPaymentActivities({ orm, paymentGateways: gateways }: PaymentActivityDeps) {
  const gateway = (name: GatewayName) => {
    try {
      return gateways.get(name);
    } catch (err) {
      return rethrow(err);
    }
  };

  /**
   * A payment started without a routing decision is a saved card's charge (billing's collections
   * start the payment workflow with the card on file and the gateway that tokenised it): how it was
   * routed is worked out here, once, and recorded with the payment (see `savedCardRouting`).
   */
  const savedCardChargeRouting = async (em: EntityManager, input: PaymentWorkflowInput): Promise<PaymentRouting | undefined> => {
    if (!input.card || input.kind !== 'charge') return undefined;
    return savedCardRouting(em, gateways, scopeOf(input), { currency: input.currency, amount: input.amount, brand: input.card.brand }, input.gateway);
  };

  return {
    async recordPayment(input: PaymentWorkflowInput): Promise<PaymentView> {
      try {
        const em = scopedEm(orm, scopeOf(input));
        return await recordPayment(em, { ...input, routing: input.routing ?? await savedCardChargeRouting(em, input) }, paymentWorkflowId(input.paymentId));
      } catch (err) {
        if (err instanceof DuplicatePaymentError) {
          throw refuse(REFUSALS.duplicatePayment, err.message, { paymentId: err.existingPaymentId });
        }
        throw err;
      }
    },

    /** Charges the card (idempotent at the gateway) and records the outcome with its event. */
    async chargePayment(input: PaymentRef & { gateway: GatewayName; amount: number; currency: string; cardToken: string; fingerprint: string; customerId: string | null; description: string | null; fraudProtection: boolean }): Promise<PaymentView> {
      const result = await withHeartbeat(() => gateway(input.gateway).charge({
        idempotencyKey: gatewayKeys.charge(input.paymentId),
        merchant: gatewayMerchant(input),
        amount: input.amount,
        currency: input.currency,
        card: { token: input.cardToken, fingerprint: input.fingerprint },
        customerId: input.customerId,
        description: input.description,
        fraudProtection: input.fraudProtection,
        paymentId: input.paymentId,
      })).catch(rethrow);
      return completeCharge(scopedEm(orm, scopeOf(input)), scopeOf(input), input.paymentId, result, input.requestId);
    },

    /**
     * A split funded by the platform balance: refused up front (402 `balance_insufficient`, nothing
     * transferred) when the gateway's available balance is less than what the transfers pay out. Each
     * transfer is checked again by the gateway itself, atomically, so concurrent splits cannot overdraw.
     */
    async checkSplitBalance(input: PaymentRef & { gateway: GatewayName; currency: string; amount: number }): Promise<PaymentView> {
      const { available } = await withHeartbeat(() => gateway(input.gateway).balance({ merchant: gatewayMerchant(input), currency: input.currency })).catch(rethrow);
      const em = scopedEm(orm, scopeOf(input));
      if (available >= input.amount) return getPayment(em, input.paymentId);
      return failPayment(em, scopeOf(input), input.paymentId, 'balance_insufficient',
        `The platform balance has ${available} ${input.currency} minor units available; the split pays out ${input.amount}.`, input.requestId, available);
    },

    async failPayment(input: PaymentRef & { code: string; message: string }): Promise<PaymentView> {
      return failPayment(scopedEm(orm, scopeOf(input)), scopeOf(input), input.paymentId, input.code, input.message, input.requestId);
    },

    async transferSplitPart(input: PaymentRef & { gateway: GatewayName; transferId: string }): Promise<TransferView> {
      const em = scopedEm(orm, scopeOf(input));
      const t = await getTransfer(em, input.transferId);
      const payment = await paymentForRefund(em, input.paymentId);
      if (t.status !== 'pending') return recordTransferResult(em, t.id, { outcome: 'paid', reference: t.gatewayReference ?? '' });
      const result = await withHeartbeat(() => gateway(input.gateway).transfer({
        idempotencyKey: gatewayKeys.transfer(t.id), merchant: gatewayMerchant(input), destination: t.destination, amount: t.amount, currency: t.currency,
        chargeReference: payment.funding === 'platform_balance' ? null : payment.gatewayChargeReference ?? payment.gatewayReference ?? '', group: input.paymentId,
      })).catch(rethrow);
      return recordTransferResult(em, t.id, result);
    },

    async reverseSplitTransfer(input: PaymentRef & { gateway: GatewayName; transferId: string }): Promise<void> {
      const em = scopedEm(orm, scopeOf(input));
      const t = await getTransfer(em, input.transferId);
      if (t.status !== 'paid' || !t.gatewayReference) return;
      await withHeartbeat(() => gateway(input.gateway).reverseTransfer({
        idempotencyKey: gatewayKeys.reversal(t.id), transferReference: t.gatewayReference!, amount: t.amount, currency: t.currency,
      })).catch(rethrow);
      await markTransferReversed(em, t.id);
    },

    async finishSplit(input: PaymentRef & { status: 'completed' | 'reversed' }): Promise<PaymentView> {
      return finishSplit(scopedEm(orm, scopeOf(input)), input.paymentId, input.status, scopeOf(input), input.requestId);
    },

    async reserveRefund(input: RefundWorkflowInput): Promise<RefundOutcome> {
      // The refund's own workflow, or the payment workflow compensating a failed split.
      return reserveRefund(await nativePool(orm), input, Context.current().info.workflowExecution?.workflowId ?? refundWorkflowId(input.refundId));
    },

    /** Refunds at the gateway and records it (`payment.refunded`); a refusal releases the reservation. */
    async executeRefund(input: { refundId: string; paymentId: string; accountId: string; livemode: boolean; requestId: string | null }): Promise<RefundView> {
      const em = scopedEm(orm, scopeOf(input));
      const payment = await paymentForRefund(em, input.paymentId);
      const refund = await getRefund(em, input.refundId);
      if (refund.status !== 'pending') return refund;
      try {
        const { reference } = await withHeartbeat(() => gateways.get(payment.gateway as GatewayName).refund({
          idempotencyKey: gatewayKeys.refund(input.refundId),
          chargeReference: payment.gatewayReference ?? '',
          amount: refund.amount,
          currency: refund.currency,
        }));
        return completeRefund(scopedEm(orm, scopeOf(input)), scopeOf(input), input.refundId, reference, input.requestId);
      } catch (err) {
        if (err instanceof GatewayRejectedError) return failRefund(scopedEm(orm, scopeOf(input)), input.refundId, err.message);
        throw err;
      }
    },
  };
}

export type PaymentActivities = ReturnType<typeof createPaymentActivities>;
