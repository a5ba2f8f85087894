import { allHandlersFinished, condition, proxyActivities, setHandler } from '@temporalio/workflow';
import type { PaymentActivities } from '../../activities/payments/index.ts';
import { DB_STEPS, GATEWAY_STEPS, awaitRefundOutcomeUpdate, type RefundOutcome, type RefundWorkflowInput } from './shared.ts';

const db = proxyActivities<PaymentActivities>(DB_STEPS);
const gateway = proxyActivities<PaymentActivities>(GATEWAY_STEPS);

/**
 * One refund (`refund-re_…`): reserve the amount atomically against what remains on the payment,
 * refund at the gateway (same idempotency key on every retry), then record it with
 * `payment.refunded`; a gateway refusal releases the reservation.
 */
export async function refundWorkflow(input: RefundWorkflowInput): Promise<RefundOutcome> {
  let outcome: RefundOutcome | undefined;
  let finished = false;
  setHandler(awaitRefundOutcomeUpdate, async ({ waitMs }) => {
    await condition(() => outcome !== undefined);
    if (outcome!.accepted && !finished && waitMs > 0) await condition(() => finished, waitMs);
    return outcome!;
  });

  outcome = await db.reserveRefund(input);
  if (outcome.accepted && outcome.refund.status === 'pending') {
    const refund = await gateway.executeRefund({
      refundId: input.refundId, paymentId: input.paymentId, accountId: input.accountId, livemode: input.livemode, requestId: input.requestId,
    });
    outcome = { accepted: true, refund };
  }
  finished = true;
  await condition(allHandlersFinished);
  return outcome;
}
