import { LockMode, type EntityManager } from '@mikro-orm/postgresql';
import type { Pool } from 'pg';
import { notFound } from '../../platform/errors.ts';
import { recordEvent } from '../events/outbox.ts';
import { findNewestPerParent, scopeColumns, type Scope } from '../scope.ts';
import type {
  PaymentView, PaymentWorkflowInput, RefundOutcome, RefundView, RefundWorkflowInput, TransferView,
} from '../../workflows/payments/shared.ts';
import { Payment, PaymentGatewaySetting, PaymentRefund, PaymentTransfer, type PaymentStatus } from './entities.ts';
import type { ChargeResult, GatewayName, TransferResult } from './gateways/types.ts';
import type { PaymentGateways } from './gateways/index.ts';
import { isUniqueViolation } from '../../db/errors.ts';

/**
 * Payment records: written only by the payment workflows' activities (so the row and the workflow
 * can never disagree about whether a payment exists), read by the API. Every status change and its
 * event (`payment.succeeded`, `payment.failed`, `payment.refunded`) are one transaction.
 */
export function transferView(t: PaymentTransfer): TransferView {
  return {
    id: t.id, object: 'transfer', destination: t.destination, amount: t.amount, currency: t.currency, status: t.status,
    failure: t.failureCode ? { code: t.failureCode, message: t.failureMessage ?? '' } : null,
  };
}

export function paymentView(p: Payment, transfers: PaymentTransfer[] = []): PaymentView {
  const view: PaymentView = {
    id: p.id,
    object: 'payment',
    livemode: p.livemode,
    status: p.status,
    amount: p.amount,
    amount_refunded: p.amountRefunded,
    currency: p.currency,
    gateway: p.gateway,
    routing: p.routing ?? null,
    created: p.createdAt.toISOString(),
    created_at: p.createdAt.toISOString(),
    updated_at: p.updatedAt.toISOString(),
    customer_id: p.customerId ?? null,
    description: p.description ?? null,
    fraud_protection: p.fraudProtection,
    payment_method: p.cardBrand && p.cardLast4 && p.cardExpMonth !== null && p.cardExpMonth !== undefined && p.cardExpYear !== null && p.cardExpYear !== undefined
      ? { type: 'card', card: { brand: p.cardBrand, last4: p.cardLast4, exp_month: p.cardExpMonth, exp_year: p.cardExpYear } }
      : null,
    funding: p.funding ?? 'card',
    risk_score: p.riskScore ?? null,
    settlement: { expected_date: p.settlementExpectedDate ?? null, fees: p.fees ?? null },
    failure: p.failureCode ? {
      code: p.failureCode, decline_code: p.declineCode ?? null, message: p.failureMessage ?? '',
      ...(p.balanceAvailable !== null && p.balanceAvailable !== undefined ? { available: p.balanceAvailable } : {}),
    } : null,
    workflow_id: p.workflowId,
    metadata: p.metadata,
  };
  if (p.kind === 'marketplace_split') {
    view.split = {
      status: p.splitStatus ?? 'pending',
      platform_fee: p.platformFee ?? 0,
      rounding_remainder: p.roundingRemainder ?? 0,
      transfers: [...transfers].sort((a, b) => a.position - b.position).map(transferView),
    };
  }
  return view;
}

export function refundView(r: PaymentRefund): RefundView {
  return {
    id: r.id, object: 'refund', livemode: r.livemode, payment_id: r.paymentId, amount: r.amount, currency: r.currency,
    status: r.status, reason: r.reason ?? null, failure_message: r.failureMessage ?? null, workflow_id: r.workflowId ?? null,
    metadata: r.metadata, created_at: r.createdAt.toISOString(),
  };
}

async function loadView(em: EntityManager, payment: Payment): Promise<PaymentView> {
  const transfers = payment.kind === 'marketplace_split' ? await em.find(PaymentTransfer, { paymentId: payment.id }) : [];
  return paymentView(payment, transfers);
}

export async function getPayment(em: EntityManager, id: string): Promise<PaymentView> {
  const payment = await em.findOne(Payment, { id });
  if (!payment) throw notFound('payment', id);
  return loadView(em, payment);
}

/** What another area may know of a payment that paid for something: only a succeeded one, in the em's account and mode. */
export interface SucceededPayment {
  id: string;
  amount: number;
  currency: string;
  /** Minor units refunded so far (a refund after the fact does not unmake the payment). */
  amountRefunded: number;
}

/**
 * The payment `id` when it succeeded, in the account and mode the em is scoped to; null for an
 * unknown id, another account's or mode's payment, or one that is processing, failed or refunded.
 */
export async function findSucceededPayment(em: EntityManager, id: string): Promise<SucceededPayment | null> {
  const payment = await em.findOne(Payment, { id, status: 'succeeded' });
  return payment ? { id: payment.id, amount: payment.amount, currency: payment.currency, amountRefunded: payment.amountRefunded } : null;
}

export async function findPaymentByRequestKey(em: EntityManager, key: string): Promise<PaymentView | null> {
  const payment = await em.findOne(Payment, { requestIdempotencyKey: key });
  return payment ? loadView(em, payment) : null;
}

/** Test mode: the sandbox, always. Live mode: the account's choice, else the server default (null: none configured). */
export async function gatewayFor(em: EntityManager, gateways: PaymentGateways, scope: Scope): Promise<GatewayName | null> {
  if (!scope.livemode) return 'sandbox';
  const setting = await em.findOne(PaymentGatewaySetting, { accountId: scope.accountId });
  return setting?.liveGateway ?? gateways.liveDefault;
}

export async function setLiveGateway(em: EntityManager, accountId: string, gateway: GatewayName): Promise<void> {
  await em.upsert(PaymentGatewaySetting, { accountId, liveGateway: gateway, updatedAt: new Date() });
}

export class DuplicatePaymentError extends Error {
  readonly existingPaymentId: string;
  constructor(existingPaymentId: string) {
    super(`A payment for this Idempotency-Key already exists: ${existingPaymentId}.`);
    this.existingPaymentId = existingPaymentId;
    this.name = 'DuplicatePaymentError';
  }
}

/**
 * Writes the payment (and its planned transfers) as `processing`; a retry finds it written. The
 * insert comes first, with nothing read before it: a plain charge is one statement. Only when a
 * unique index refuses it is the row looked up — this payment, written by an earlier attempt (its
 * view is returned), or another payment for the same request Idempotency-Key (refused).
 */
export async function recordPayment(em: EntityManager, input: PaymentWorkflowInput, workflowId: string): Promise<PaymentView> {
  const scope = { accountId: input.accountId, livemode: input.livemode };
  const now = new Date();
  const payment = em.create(Payment, {
    id: input.paymentId,
    ...scopeColumns(scope),
    kind: input.kind,
    status: 'processing',
    amount: input.amount,
    amountRefunded: 0,
    currency: input.currency,
    customerId: input.customerId,
    description: input.description,
    fraudProtection: input.fraudProtection,
    gateway: input.gateway,
    gatewayReference: null,
    funding: input.funding ?? 'card',
    routing: input.routing ?? null,
    cardBrand: input.card?.brand ?? null,
    cardLast4: input.card?.last4 ?? null,
    cardExpMonth: input.card?.expMonth ?? null,
    cardExpYear: input.card?.expYear ?? null,
    cardToken: input.card?.token ?? null,
    balanceAvailable: null,
    gatewayChargeReference: null,
    riskScore: null,
    fees: null,
    settlementExpectedDate: null,
    failureCode: null,
    declineCode: null,
    failureMessage: null,
    platformFee: input.split?.platformFee ?? null,
    roundingRemainder: input.split?.roundingRemainder ?? null,
    splitStatus: input.split ? 'pending' : null,
    workflowId,
    requestIdempotencyKey: input.requestIdempotencyKey,
    requestId: input.requestId,
    metadata: input.metadata,
    createdAt: now,
    updatedAt: now,
  }, { persist: false });
  try {
    if (!input.split) {
      await em.insert(payment);
      return paymentView(payment);
    }
    return await em.transactional(async (tx) => {
      // No ORM relation links the two tables, so the payment row goes first (the transfers reference it).
      await tx.insert(payment);
      const transfers = input.split!.transfers.map((t, position) => tx.create(PaymentTransfer, {
        id: t.id, ...scopeColumns(scope), paymentId: input.paymentId, position, destination: t.destination, amount: t.amount,
        currency: input.currency, status: 'pending', gatewayReference: null, failureCode: null, failureMessage: null,
      }));
      await tx.flush();
      return paymentView(payment, transfers);
    });
  } catch (err) {
    if (!isUniqueViolation(err)) throw err;
    const fresh = em.fork();
    const written = await fresh.findOne(Payment, { id: input.paymentId });
    if (written) return loadView(fresh, written);
    const other = input.requestIdempotencyKey ? await fresh.findOne(Payment, { requestIdempotencyKey: input.requestIdempotencyKey }) : null;
    if (other) throw new DuplicatePaymentError(other.id);
    throw err;
  }
}

/** Applies the gateway's answer once; a repeated call returns the payment as it is. */
export async function completeCharge(em: EntityManager, scope: Scope, paymentId: string, result: ChargeResult, requestId: string | null): Promise<PaymentView> {
  return em.transactional(async (tx) => {
    const payment = await tx.findOne(Payment, { id: paymentId }, { lockMode: LockMode.PESSIMISTIC_WRITE });
    if (!payment) throw notFound('payment', paymentId);
    if (payment.status !== 'processing') return loadView(tx, payment);
    payment.gatewayReference = result.reference;
    if (result.outcome === 'succeeded') payment.gatewayChargeReference = result.chargeReference ?? null;
    payment.riskScore = result.riskScore;
    const transfers = payment.kind === 'marketplace_split' ? await tx.find(PaymentTransfer, { paymentId }) : [];
    if (result.outcome === 'succeeded') {
      payment.status = 'succeeded';
      payment.fees = result.fees;
      payment.settlementExpectedDate = result.settlementDate;
    } else {
      payment.status = 'failed';
      payment.failureCode = 'card_declined';
      payment.declineCode = result.declineCode;
      payment.failureMessage = result.message;
      if (payment.kind === 'marketplace_split') {
        payment.splitStatus = 'canceled';
        for (const t of transfers) t.status = 'canceled';
      }
    }
    payment.updatedAt = new Date();
    const view = paymentView(payment, transfers);
    recordEvent(tx, scope, {
      type: result.outcome === 'succeeded' ? 'payment.succeeded' : 'payment.failed',
      object: view, customerId: payment.customerId ?? null, requestId,
    });
    await tx.flush();
    return view;
  });
}

/** A payment the gateway could not charge at all (rejected request, or retries exhausted). */
export async function failPayment(
  em: EntityManager, scope: Scope, paymentId: string, code: string, message: string, requestId: string | null, available: number | null = null,
): Promise<PaymentView> {
  return em.transactional(async (tx) => {
    const payment = await tx.findOne(Payment, { id: paymentId }, { lockMode: LockMode.PESSIMISTIC_WRITE });
    if (!payment) throw notFound('payment', paymentId);
    if (payment.status !== 'processing') return loadView(tx, payment);
    payment.status = 'failed';
    payment.failureCode = code;
    payment.declineCode = null;
    payment.failureMessage = message;
    payment.balanceAvailable = available;
    const transfers = payment.kind === 'marketplace_split' ? await tx.find(PaymentTransfer, { paymentId }) : [];
    if (payment.kind === 'marketplace_split') {
      payment.splitStatus = 'canceled';
      for (const t of transfers) t.status = 'canceled';
    }
    payment.updatedAt = new Date();
    const view = paymentView(payment, transfers);
    recordEvent(tx, scope, { type: 'payment.failed', object: view, customerId: payment.customerId ?? null, requestId });
    await tx.flush();
    return view;
  });
}

export async function getTransfer(em: EntityManager, transferId: string): Promise<PaymentTransfer> {
  const t = await em.findOne(PaymentTransfer, { id: transferId });
  if (!t) throw notFound('transfer', transferId);
  return t;
}

export async function recordTransferResult(em: EntityManager, transferId: string, result: TransferResult): Promise<TransferView> {
  const t = await getTransfer(em, transferId);
  if (t.status === 'pending') {
    t.updatedAt = new Date();
    if (result.outcome === 'paid') {
      t.status = 'paid';
      t.gatewayReference = result.reference;
    } else {
      t.status = 'failed';
      t.failureCode = result.code;
      t.failureMessage = result.message;
      if (result.available !== undefined) {
        await em.nativeUpdate(Payment, { id: t.paymentId }, { balanceAvailable: result.available, updatedAt: new Date() });
      }
    }
    await em.flush();
  }
  return transferView(t);
}

export async function markTransferReversed(em: EntityManager, transferId: string): Promise<void> {
  await em.nativeUpdate(PaymentTransfer, { id: transferId, status: 'paid' }, { status: 'reversed', updatedAt: new Date() });
}

/**
 * Ends a split. A card-funded one already has its status (the charge's, then the refund's). One
 * funded by the platform balance had no charge: it succeeds once every transfer is paid
 * (`payment.succeeded`), and fails with the failed transfer's code when they were reversed
 * (`payment.failed`), in the same transaction.
 */
export async function finishSplit(
  em: EntityManager, paymentId: string, status: 'completed' | 'reversed', scope?: Scope, requestId: string | null = null,
): Promise<PaymentView> {
  return em.transactional(async (tx) => {
    const payment = await tx.findOne(Payment, { id: paymentId }, { lockMode: LockMode.PESSIMISTIC_WRITE });
    if (!payment) throw notFound('payment', paymentId);
    if (status === 'reversed') await tx.nativeUpdate(PaymentTransfer, { paymentId, status: 'pending' }, { status: 'canceled', updatedAt: new Date() });
    if (payment.splitStatus !== 'pending') return loadView(tx, payment);
    payment.splitStatus = status;
    payment.updatedAt = new Date();
    const transfers = await tx.find(PaymentTransfer, { paymentId }, { refresh: true });
    if (payment.funding === 'platform_balance' && payment.status === 'processing') {
      if (status === 'completed') {
        payment.status = 'succeeded';
      } else {
        const failed = transfers.find((t) => t.status === 'failed');
        payment.status = 'failed';
        payment.failureCode = failed?.failureCode === 'balance_insufficient' ? 'balance_insufficient' : 'transfer_failed';
        payment.declineCode = null;
        payment.failureMessage = failed?.failureMessage ?? 'A transfer of the split failed; the transfers made were reversed.';
      }
      const view = paymentView(payment, transfers);
      if (scope) {
        recordEvent(tx, scope, { type: status === 'completed' ? 'payment.succeeded' : 'payment.failed', object: view, customerId: payment.customerId ?? null, requestId });
      }
    }
    await tx.flush();
    return paymentView(payment, transfers);
  });
}

/**
 * Reserves a refund: in one statement, the payment's refunded amount grows by the refund only if
 * that leaves it within the amount charged (re-checked under the row lock, so concurrent refunds
 * can never refund more than was paid); the refund row is written in the same transaction.
 */
export async function reserveRefund(pool: Pool, input: RefundWorkflowInput, workflowId: string): Promise<RefundOutcome> {
  const client = await pool.connect();
  try {
    await client.query('begin');
    const prior = await client.query<RefundRow>(
      `select * from payment_refunds where id = $1
          or (account_id = $2 and livemode = $3 and request_idempotency_key = $4)`,
      [input.refundId, input.accountId, input.livemode, input.requestIdempotencyKey]);
    if (prior.rows[0]) {
      await client.query('commit');
      return { accepted: true, refund: refundRowView(prior.rows[0]) };
    }
    const reserved = await client.query<{ amount: string; currency: string }>(
      `with cur as (
         select amount - amount_refunded as remaining from payments where id = $1 and account_id = $2 and livemode = $3
       )
       update payments p set amount_refunded = p.amount_refunded + r.amt, updated_at = now()
         from (select coalesce($4::bigint, remaining) as amt from cur) r
        where p.id = $1 and p.account_id = $2 and p.livemode = $3
          and p.status in ('succeeded', 'partially_refunded') and p.funding = 'card'
          and r.amt > 0 and r.amt <= p.amount - p.amount_refunded
       returning r.amt as amount, p.currency`,
      [input.paymentId, input.accountId, input.livemode, input.amount],
    );
    const row = reserved.rows[0];
    if (!row) {
      await client.query('rollback');
      const found = await client.query<{ status: PaymentStatus; amount: string; amount_refunded: string; currency: string; funding: string }>(
        'select status, amount, amount_refunded, currency, funding from payments where id = $1 and account_id = $2 and livemode = $3',
        [input.paymentId, input.accountId, input.livemode]);
      const p = found.rows[0];
      if (!p) return { accepted: false, code: 'payment_not_found', message: `No payment with id '${input.paymentId}'.`, remaining: null };
      const remaining = Number(p.amount) - Number(p.amount_refunded);
      if (p.funding !== 'card') {
        return { accepted: false, code: 'payment_not_refundable', message: 'The payment was funded by the platform balance: no card was charged, so there is nothing to refund.', remaining: 0 };
      }
      if (p.status !== 'succeeded' && p.status !== 'partially_refunded') {
        return { accepted: false, code: 'payment_not_refundable', message: `The payment is ${p.status}; only a succeeded payment can be refunded.`, remaining };
      }
      return {
        accepted: false, code: 'refund_exceeds_remaining', remaining,
        message: `The refund (${input.amount ?? remaining}) is more than what remains to refund on this payment (${remaining} ${p.currency} minor units).`,
      };
    }
    const inserted = await client.query<RefundRow>(
      `insert into payment_refunds
         (id, account_id, livemode, payment_id, amount, currency, status, reason, workflow_id, request_idempotency_key, metadata, created_at, updated_at)
       values ($1, $2, $3, $4, $5, $6, 'pending', $7, $8, $9, $10, now(), now()) returning *`,
      [input.refundId, input.accountId, input.livemode, input.paymentId, row.amount, row.currency, input.reason, workflowId,
        input.requestIdempotencyKey, input.metadata],
    );
    await client.query('commit');
    return { accepted: true, refund: refundRowView(inserted.rows[0]!) };
  } catch (err) {
    await client.query('rollback').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}

interface RefundRow {
  id: string; livemode: boolean; payment_id: string; amount: string; currency: string; status: RefundView['status'];
  reason: string | null; failure_message: string | null; workflow_id: string | null; metadata: Record<string, string>; created_at: Date;
}

function refundRowView(r: RefundRow): RefundView {
  return {
    id: r.id, object: 'refund', livemode: r.livemode, payment_id: r.payment_id, amount: Number(r.amount), currency: r.currency,
    status: r.status, reason: r.reason, failure_message: r.failure_message, workflow_id: r.workflow_id, metadata: r.metadata,
    created_at: new Date(r.created_at).toISOString(),
  };
}

/** The gateway refunded: the refund succeeds and the payment shows it, with `payment.refunded`. */
export async function completeRefund(em: EntityManager, scope: Scope, refundId: string, gatewayReference: string, requestId: string | null): Promise<RefundView> {
  return em.transactional(async (tx) => {
    const refund = await tx.findOne(PaymentRefund, { id: refundId }, { lockMode: LockMode.PESSIMISTIC_WRITE });
    if (!refund) throw notFound('refund', refundId);
    if (refund.status !== 'pending') return refundView(refund);
    const payment = await tx.findOne(Payment, { id: refund.paymentId }, { lockMode: LockMode.PESSIMISTIC_WRITE });
    if (!payment) throw notFound('payment', refund.paymentId);
    refund.status = 'succeeded';
    refund.gatewayReference = gatewayReference;
    refund.updatedAt = new Date();
    // amount_refunded already includes every reserved refund; the status counts the succeeded ones.
    const succeeded = await tx.find(PaymentRefund, { paymentId: payment.id, status: 'succeeded' });
    const refunded = succeeded.reduce((sum, r) => sum + r.amount, 0) + (succeeded.some((r) => r.id === refund.id) ? 0 : refund.amount);
    payment.status = refunded >= payment.amount ? 'refunded' : 'partially_refunded';
    payment.updatedAt = new Date();
    const transfers = payment.kind === 'marketplace_split' ? await tx.find(PaymentTransfer, { paymentId: payment.id }) : [];
    recordEvent(tx, scope, {
      type: 'payment.refunded',
      object: { ...paymentView(payment, transfers), refund: refundView(refund) },
      customerId: payment.customerId ?? null, requestId,
    });
    await tx.flush();
    return refundView(refund);
  });
}

/** The gateway refused the refund: release the reservation (atomic decrement) and fail the refund. */
export async function failRefund(em: EntityManager, refundId: string, message: string): Promise<RefundView> {
  return em.transactional(async (tx) => {
    const refund = await tx.findOne(PaymentRefund, { id: refundId }, { lockMode: LockMode.PESSIMISTIC_WRITE });
    if (!refund) throw notFound('refund', refundId);
    if (refund.status !== 'pending') return refundView(refund);
    refund.status = 'failed';
    refund.failureMessage = message;
    refund.updatedAt = new Date();
    await tx.getConnection().execute(
      'update payments set amount_refunded = amount_refunded - ?, updated_at = now() where id = ? and account_id = ? and livemode = ?',
      [refund.amount, refund.paymentId, refund.accountId, refund.livemode], 'run', tx.getTransactionContext());
    await tx.flush();
    return refundView(refund);
  });
}

export async function getRefund(em: EntityManager, refundId: string): Promise<RefundView> {
  const refund = await em.findOne(PaymentRefund, { id: refundId });
  if (!refund) throw notFound('refund', refundId);
  return refundView(refund);
}

export async function paymentForRefund(em: EntityManager, paymentId: string): Promise<Payment> {
  const payment = await em.findOne(Payment, { id: paymentId });
  if (!payment) throw notFound('payment', paymentId);
  return payment;
}

/** The newest `perCustomer` payments of each of many customers, with their transfers, in two queries. */
export async function paymentsOfCustomers(em: EntityManager, customerIds: readonly string[], perCustomer: number): Promise<PaymentView[]> {
  const payments = await findNewestPerParent(em, Payment, 'customerId', customerIds, perCustomer);
  const splits = payments.filter((p) => p.kind === 'marketplace_split').map((p) => p.id);
  const transfers = splits.length ? await em.find(PaymentTransfer, { paymentId: { $in: splits } }) : [];
  return payments.map((p) => paymentView(p, transfers.filter((t) => t.paymentId === p.id)));
}
