import {
  ActivityFailure, ApplicationFailure, TimeoutFailure, allHandlersFinished, condition, log, patched, proxyActivities, proxyLocalActivities, setHandler,
} from '@temporalio/workflow';
import type { PaymentActivities } from '../../activities/payments/index.ts';
import { REFUSALS, refuse } from '../kit/failures.ts';
import {
  DB_STEPS, GATEWAY_STEPS, awaitPaymentOutcomeUpdate, type PaymentView, type PaymentWorkflowInput,
} from './shared.ts';
import { recordStatus } from '../kit/search-attributes.ts';
import { stepsWithLocalFirstWrite } from '../kit/steps.ts';

/** Database steps; recording the payment runs locally, in the first workflow task (workflows/kit/steps.ts). */
const { steps: db, firstWrite } = stepsWithLocalFirstWrite<PaymentActivities>(DB_STEPS, 'payments-record-locally');
/** A gateway's rejection of the charge is final: not retried. */
const gateway = proxyActivities<PaymentActivities>({
  ...GATEWAY_STEPS,
  retry: { ...GATEWAY_STEPS.retry, nonRetryableErrorTypes: [REFUSALS.gatewayRejected] },
});

const TERMINAL = new Set<PaymentView['status']>(['succeeded', 'failed', 'partially_refunded', 'refunded']);

/**
 * The charge's first attempt, run locally in the workflow task that recorded the payment, bounded
 * by the wait of the request that started it: a card that answers within the wait is charged,
 * recorded and answered in one workflow task. One attempt; what it leaves undecided (the wait ran
 * out, the gateway was down) goes to the charge activity, with the same gateway idempotency key.
 */
const chargeLocally = (waitMs: number) => proxyLocalActivities<PaymentActivities>({ startToCloseTimeout: waitMs, retry: { maximumAttempts: 1 } });

/**
 * One payment (`payment-pay_…`): record it, charge the card through the account's gateway, and for
 * a marketplace split pay each destination, reversing the transfers already made (and refunding
 * the charge) if one fails. The API starts it with the `awaitPaymentOutcome` update, which answers
 * once the payment is recorded and either settled or still going after the request's wait.
 */
export async function paymentWorkflow(input: PaymentWorkflowInput): Promise<PaymentView> {
  let view: PaymentView | undefined;
  let finished = false;
  let rejected: ApplicationFailure | undefined;
  const ref = { paymentId: input.paymentId, accountId: input.accountId, livemode: input.livemode, requestId: input.requestId };

  /** The wait of the request that started the payment (update-with-start); none when started without one. */
  let firstWaitMs: number | undefined;
  /** The charge's local attempt: while it runs, the request that started the payment waits for it instead of a timer. */
  let localCharge: 'none' | 'running' | 'ran_out_of_time' | 'ended' = 'none';

  setHandler(awaitPaymentOutcomeUpdate, async ({ waitMs }) => {
    const starting = firstWaitMs === undefined;
    firstWaitMs ??= waitMs;
    await condition(() => view !== undefined || rejected !== undefined);
    if (rejected) throw rejected;
    if (localCharge === 'running') await condition(() => localCharge !== 'running');
    // The starting request's wait was the local attempt; a later one (a retry) waits its own.
    const waited = starting && localCharge === 'ran_out_of_time';
    if (!finished && waitMs > 0 && !waited) await condition(() => finished, waitMs);
    return view!;
  });

  try {
    view = await firstWrite().recordPayment(input);
  } catch (err) {
    rejected = refuse(REFUSALS.duplicatePayment, 'The payment could not be recorded.', { cause: String(err) });
    await condition(allHandlersFinished);
    throw rejected;
  }

  const balanceFunded = input.funding === 'platform_balance';
  if (view.status === 'processing' && balanceFunded) {
    // Nothing to charge: the transfers are paid out of the platform's gateway balance, if it has enough.
    const payout = (input.split?.transfers ?? []).reduce((sum, t) => sum + t.amount, 0);
    try {
      view = await gateway.checkSplitBalance({ ...ref, gateway: input.gateway, currency: input.currency, amount: payout });
    } catch (err) {
      log.warn('balance check failed for good', { paymentId: input.paymentId, error: String(err) });
      view = await db.failPayment({ ...ref, code: 'processing_error', message: 'The gateway could not report the platform balance.' });
    }
  } else if (view.status === 'processing') {
    const charge = {
      ...ref, gateway: input.gateway, amount: input.amount, currency: input.currency, cardToken: input.card!.token,
      fingerprint: input.card!.fingerprint, customerId: input.customerId, description: input.description,
      fraudProtection: input.fraudProtection,
    };
    let charged: PaymentView | 'refused' | undefined;
    // A split's transfers follow the charge, so its request keeps waiting on a timer: only plain charges go local.
    if (input.kind === 'charge' && firstWaitMs && patched('payments-charge-locally')) {
      localCharge = 'running';
      try {
        charged = await chargeLocally(firstWaitMs).chargePayment(charge);
        localCharge = 'ended';
      } catch (err) {
        const cause = err instanceof ActivityFailure ? err.cause : undefined;
        localCharge = cause instanceof TimeoutFailure ? 'ran_out_of_time' : 'ended';
        if (cause instanceof ApplicationFailure && cause.type === REFUSALS.gatewayRejected) charged = 'refused';
        else log.info('local charge attempt left the charge undecided; the charge activity goes on', { paymentId: input.paymentId, error: String(err) });
      }
    }
    if (!charged) {
      try {
        charged = await gateway.chargePayment(charge);
      } catch (err) {
        log.warn('charge failed for good', { paymentId: input.paymentId, error: String(err) });
        charged = 'refused';
      }
    }
    view = charged !== 'refused' ? charged
      : await db.failPayment({ ...ref, code: 'processing_error', message: 'The gateway could not process the payment.' });
  }

  const funded = balanceFunded ? view.status === 'processing' : view.status === 'succeeded';
  if (input.split && funded && view.split?.status === 'pending') {
    view = await runTransfers(input, view, ref);
  }

  recordStatus(view.status);
  finished = TERMINAL.has(view.status);
  await condition(allHandlersFinished);
  return view;
}

/** The split's saga: transfers in order; on a failure, compensate in reverse order, then refund. */
async function runTransfers(
  input: PaymentWorkflowInput, view: PaymentView, ref: { paymentId: string; accountId: string; livemode: boolean; requestId: string | null },
): Promise<PaymentView> {
  const split = input.split!;
  const paid: string[] = [];
  for (const planned of split.transfers) {
    const result = await gateway.transferSplitPart({ ...ref, gateway: input.gateway, transferId: planned.id });
    if (result.status === 'paid') {
      paid.push(planned.id);
      continue;
    }
    for (const transferId of paid.reverse()) {
      await gateway.reverseSplitTransfer({ ...ref, gateway: input.gateway, transferId });
    }
    // Funded by the platform balance: nothing was charged, so nothing to refund; the payment fails.
    if (input.funding === 'platform_balance') return db.finishSplit({ ...ref, status: 'reversed' });
    const refund = await db.reserveRefund({
      refundId: split.compensationRefundId, paymentId: input.paymentId, accountId: input.accountId, livemode: input.livemode,
      amount: null, reason: 'split_transfer_failed', metadata: { failed_transfer: planned.id }, requestId: input.requestId, requestIdempotencyKey: null,
    });
    if (refund.accepted) {
      await gateway.executeRefund({ refundId: split.compensationRefundId, paymentId: input.paymentId, accountId: input.accountId, livemode: input.livemode, requestId: input.requestId });
    }
    return db.finishSplit({ ...ref, status: 'reversed' });
  }
  return db.finishSplit({ ...ref, status: 'completed' });
}
