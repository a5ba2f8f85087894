import { afterAll, describe, expect, it } from 'vitest';
import type { TestPlatform } from '../support/platform.ts';
import { captureOutput, cardBody, findCardData, waitForPayment } from './support.ts';
import { usePlatform, type Http } from '../support/use-platform.ts';
import { newCustomer, newPlan } from '../billing/support.ts';

let platform: TestPlatform;
let http: Http;
let key: string;
let customer: string;
const output = captureOutput();

usePlatform({ worker: true, env: { PAYMENTS_SYNC_WAIT_MS: '8000', LOG_LEVEL: 'info' } }, async (t) => {
  ({ platform, http, key } = t);
  customer = (await http('/v3/customers', { key, body: { email: 'seller@example.com', name: 'Seller' } })).body.id;
});
afterAll(() => output.stop());

const split = (body: Record<string, unknown>, headers: Record<string, string> = {}) =>
  http('/v3/payments/marketplace/split', { key, headers, body: { currency: 'USD', payment_method: cardBody('4242424242424242'), ...body } });

async function gatewayTransfers(destinations: string[]) {
  return platform.sql<{ destination: string; amount: string; status: string; reversed_at: Date | null }>(
    'select destination, amount, status, reversed_at from sandbox_gateway_transfers where destination = any($1) order by created_at', [destinations]);
}

describe('POST /v3/payments/marketplace/split', () => {
  it('charges once and pays each destination; the fee stays with the platform', async () => {
    const res = await split({ total_amount: 100, platform_fee: 10, splits: [{ destination: 'acct_seller_a', amount: 60 }, { destination: customer, percent: 30 }] });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      status: 'succeeded', amount: 10000, currency: 'USD',
      split: {
        status: 'completed', platform_fee: 1000, rounding_remainder: 0,
        transfers: [{ destination: 'acct_seller_a', amount: 6000, status: 'paid' }, { destination: customer, amount: 3000, status: 'paid' }],
      },
    });
    expect(await gatewayTransfers(['acct_seller_a', customer])).toEqual([
      expect.objectContaining({ destination: 'acct_seller_a', amount: '6000', status: 'paid', reversed_at: null }),
      expect.objectContaining({ destination: customer, amount: '3000', status: 'paid', reversed_at: null }),
    ]);
    const status = await http(`/v3/payments/${res.body.id}/status`, { key });
    expect(status.body).toEqual(res.body);
  });

  it('gives the rounding remainder of percentage splits to the platform', async () => {
    const res = await split({ total_amount: 0.05, platform_fee: 0, splits: [{ destination: 'acct_half_a', percent: 50 }, { destination: 'acct_half_b', percent: 50 }] });
    expect(res.status).toBe(201);
    expect(res.body.split).toMatchObject({ platform_fee: 1, rounding_remainder: 1, transfers: [{ amount: 2 }, { amount: 2 }] });
  });

  it('refuses parts that do not add up (422), before charging anything', async () => {
    const before = await platform.sql('select id from sandbox_gateway_charges');
    const res = await split({ total_amount: 100, platform_fee: 10, splits: [{ destination: 'acct_a', amount: 60 }, { destination: 'acct_b', amount: 20.5 }] });
    expect(res.status).toBe(422);
    expect(res.body.errors).toEqual([{ path: 'splits', message: expect.stringContaining('come to 90.50 USD, but total_amount is 100.00 USD') }]);
    const decimals = await split({ total_amount: 100.001, platform_fee: 10, splits: [{ destination: 'acct_a', amount: 90.001 }] });
    expect(decimals.status).toBe(422);
    expect(decimals.body.errors.map((e: { path: string }) => e.path)).toEqual(['total_amount', 'splits.0.amount']);
    const unknown = await split({ total_amount: 10, platform_fee: 0, splits: [{ destination: 'cus_01jzzzzzzzzzzzzzzzzzzzzzzz', amount: 10 }] });
    expect(unknown.status).toBe(422);
    expect(unknown.body.errors[0].path).toBe('splits.0.destination');
    expect(await platform.sql('select id from sandbox_gateway_charges')).toHaveLength(before.length);
  });

  it('reverses the transfers already made and refunds the charge when one transfer fails', async () => {
    const res = await split({
      total_amount: 100, platform_fee: 10,
      splits: [{ destination: 'acct_comp_first', amount: 30 }, { destination: 'acct_comp_closed', amount: 30 }, { destination: 'acct_comp_never', amount: 30 }],
    });
    expect(res.status).toBe(422);
    expect(res.body).toMatchObject({ code: 'transfer_failed', errors: [{ path: 'splits.1.destination' }] });
    const payment = (await http(`/v3/payments/${res.body.payment_id}/status`, { key })).body;
    expect(payment).toMatchObject({
      status: 'refunded', amount_refunded: 10000,
      split: { status: 'reversed', transfers: [{ status: 'reversed' }, { status: 'failed', failure: { code: 'account_closed' } }, { status: 'canceled' }] },
    });
    const ledger = await gatewayTransfers(['acct_comp_first', 'acct_comp_closed', 'acct_comp_never']);
    expect(ledger).toHaveLength(2);
    expect(ledger[0]).toMatchObject({ destination: 'acct_comp_first', status: 'paid' });
    expect(ledger[0]!.reversed_at).not.toBeNull();
    expect(ledger[1]).toMatchObject({ destination: 'acct_comp_closed', status: 'failed' });
    const [charge] = await platform.sql<{ amount_refunded: string }>('select amount_refunded from sandbox_gateway_charges where idempotency_key = $1', [`${payment.id}:charge`]);
    expect(charge!.amount_refunded).toBe('10000');
    const events = await platform.sql<{ type: string }>(`select type from events where data->'object'->>'id' = $1 order by id`, [payment.id]);
    expect(events.map((e) => e.type)).toEqual(['payment.succeeded', 'payment.refunded']);
  });

  it('answers a repeated Idempotency-Key with the first split payment, also once the HTTP record has lapsed', async () => {
    const headers = { 'idempotency-key': 'split-replay-1' };
    const body = { total_amount: 20, platform_fee: 2, splits: [{ destination: 'acct_replay_a', amount: 18 }] };
    const first = await split(body, headers);
    expect(first.status).toBe(201);
    await platform.sql(`delete from idempotency_records where key = 'split-replay-1'`);
    const again = await split(body, headers);
    expect(again.status).toBe(201);
    expect(again.body).toMatchObject({ id: first.body.id, split: { status: 'completed', transfers: [{ destination: 'acct_replay_a', amount: 1800 }] } });
    expect(await gatewayTransfers(['acct_replay_a'])).toHaveLength(1);
    expect(await platform.sql(`select id from payments where request_idempotency_key = 'split-replay-1'`)).toHaveLength(1);
  });

  it('makes no transfer when the card is declined', async () => {
    const res = await split({ total_amount: 10, platform_fee: 1, payment_method: cardBody('4000000000009995'), splits: [{ destination: 'acct_declined_dest', amount: 9 }] });
    expect(res.status).toBe(402);
    expect(res.body.decline_code).toBe('insufficient_funds');
    expect(res.body.payment.split).toMatchObject({ status: 'canceled', transfers: [{ status: 'canceled' }] });
    expect(await gatewayTransfers(['acct_declined_dest'])).toHaveLength(0);
  });

  // ---- Without a payment method: the customer's saved card, else the platform balance ----------

  it('takes the spec\'s fields alone (no currency, no payment method): USD, paid out of the platform balance', async () => {
    const ownKey = await platform.newKey({ accountId: await platform.newAccount() });
    const chargesBefore = await platform.sql('select id from sandbox_gateway_charges');
    const res = await http('/v3/payments/marketplace/split', {
      key: ownKey, body: { total_amount: 100, platform_fee: 10, splits: [{ destination: 'acct_spec_a', amount: 60 }, { destination: 'acct_spec_b', percent: 30 }] },
    });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({
      status: 'succeeded', amount: 10000, currency: 'USD', funding: 'platform_balance', payment_method: null, failure: null,
      split: {
        status: 'completed', platform_fee: 1000,
        transfers: [{ destination: 'acct_spec_a', amount: 6000, status: 'paid' }, { destination: 'acct_spec_b', amount: 3000, status: 'paid' }],
      },
    });
    // No charge at the gateway; the transfers have no source charge and are the account's own (its merchant).
    expect(await platform.sql('select id from sandbox_gateway_charges')).toHaveLength(chargesBefore.length);
    const ledger = await platform.sql<{ destination: string; amount: string; source_charge: string | null; merchant: string }>(
      `select destination, amount, source_charge, merchant from sandbox_gateway_transfers where destination in ('acct_spec_a', 'acct_spec_b') order by destination`);
    expect(ledger).toEqual([
      { destination: 'acct_spec_a', amount: '6000', source_charge: null, merchant: expect.stringMatching(/:test$/) },
      { destination: 'acct_spec_b', amount: '3000', source_charge: null, merchant: expect.stringMatching(/:test$/) },
    ]);
    // The balance went from 100,000.00 USD down by what was paid out; the platform kept its fee.
    expect(await platform.paymentGateways.sandbox.balance({ merchant: ledger[0]!.merchant, currency: 'USD' })).toEqual({ available: 10_000_000 - 9000 });
    const status = await http(`/v3/payments/${res.body.id}/status`, { key: ownKey });
    expect(status.body).toEqual(res.body);
    const events = await platform.sql<{ type: string }>(`select type from events where data->'object'->>'id' = $1 order by id`, [res.body.id]);
    expect(events.map((e) => e.type)).toEqual(['payment.succeeded']);
    // Nothing was charged, so nothing can be refunded.
    const refund = await http(`/v3/payments/${res.body.id}/refunds`, { key: ownKey, body: {} });
    expect(refund.status).toBe(409);
    expect(refund.body).toMatchObject({ code: 'payment_not_refundable', detail: expect.stringContaining('platform balance') });
  });

  it('charges the customer\'s default saved card (its subscription\'s card on file) when no payment method is given', async () => {
    const payer = await newCustomer(http, key);
    const plan = await newPlan(http, key, { amount: 1500 });
    const sub = await http('/v3/subscriptions', { key, body: { customer_id: payer, plan_id: plan.id, trial_period_days: 30, payment_method: cardBody('5555555555554444') } });
    expect(sub.status, sub.text).toBe(201);
    const [onFile] = await platform.sql<{ card_token: string }>('select card_token from subscriptions where id = $1', [sub.body.id]);
    const res = await http('/v3/payments/marketplace/split', {
      key, body: { total_amount: 50, platform_fee: 5, customer_id: payer, splits: [{ destination: 'acct_saved_card', amount: 45 }] },
    });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({
      status: 'succeeded', funding: 'card', customer_id: payer, amount: 5000, currency: 'USD',
      payment_method: { type: 'card', card: { brand: 'mastercard', last4: '4444' } },
      split: { status: 'completed', transfers: [{ destination: 'acct_saved_card', amount: 4500, status: 'paid' }] },
    });
    const [charge] = await platform.sql<{ token: string; amount: string }>('select token, amount from sandbox_gateway_charges where idempotency_key = $1', [`${res.body.id}:charge`]);
    expect(charge).toEqual({ token: onFile!.card_token, amount: '5000' });
    const [transfer] = await platform.sql<{ source_charge: string | null }>(`select source_charge from sandbox_gateway_transfers where destination = 'acct_saved_card'`);
    expect(transfer!.source_charge).toMatch(/^ch_sandbox_/);
    // A customer without a saved card: the platform balance pays.
    const other = await newCustomer(http, key);
    const fromBalance = await http('/v3/payments/marketplace/split', { key, body: { total_amount: 5, platform_fee: 0, customer_id: other, splits: [{ destination: 'acct_no_card', amount: 5 }] } });
    expect(fromBalance.status, fromBalance.text).toBe(201);
    expect(fromBalance.body).toMatchObject({ funding: 'platform_balance', payment_method: null, customer_id: other });
  });

  it('refuses a split larger than the platform balance with 402 balance_insufficient, and transfers nothing', async () => {
    const ownKey = await platform.newKey({ accountId: await platform.newAccount() });
    const res = await http('/v3/payments/marketplace/split', {
      key: ownKey, body: { total_amount: 150_000, platform_fee: 10_000, splits: [{ destination: 'acct_big_a', amount: 70_000 }, { destination: 'acct_big_b', amount: 70_000 }] },
    });
    expect(res.status, res.text).toBe(402);
    expect(res.body).toMatchObject({
      code: 'balance_insufficient', available: 10_000_000,
      payment: { status: 'failed', funding: 'platform_balance', failure: { code: 'balance_insufficient', available: 10_000_000 }, split: { status: 'canceled', transfers: [{ status: 'canceled' }, { status: 'canceled' }] } },
    });
    expect(await gatewayTransfers(['acct_big_a', 'acct_big_b'])).toEqual([]);
    const events = await platform.sql<{ type: string }>(`select type from events where data->'object'->>'id' = $1`, [res.body.payment_id]);
    expect(events.map((e) => e.type)).toEqual(['payment.failed']);
    // A balance-funded transfer that fails (closed destination) reverses the ones made; nothing to refund.
    const closed = await http('/v3/payments/marketplace/split', {
      key: ownKey, body: { total_amount: 30, platform_fee: 0, splits: [{ destination: 'acct_bal_first', amount: 10 }, { destination: 'acct_bal_closed', amount: 20 }] },
    });
    expect(closed.status, closed.text).toBe(422);
    expect(closed.body).toMatchObject({
      code: 'transfer_failed', errors: [{ path: 'splits.1.destination' }],
      payment: { status: 'failed', amount_refunded: 0, failure: { code: 'transfer_failed' }, split: { status: 'reversed', transfers: [{ status: 'reversed' }, { status: 'failed' }] } },
    });
    const [first] = await gatewayTransfers(['acct_bal_first']);
    expect(first!.reversed_at).not.toBeNull();
  });

  it('never overdraws the balance under concurrent balance-funded splits', async () => {
    const accountId = await platform.newAccount();
    const ownKey = await platform.newKey({ accountId });
    // 100,000.00 USD available; five splits of 30,000.00 each (two transfers of 15,000.00): at most three fit.
    const destinations = Array.from({ length: 5 }, (_, i) => [`acct_race_${i}_a`, `acct_race_${i}_b`] as const);
    const answers = await Promise.all(destinations.map(([a, b]) => http('/v3/payments/marketplace/split', {
      key: ownKey, body: { total_amount: 30_000, platform_fee: 0, splits: [{ destination: a, amount: 15_000 }, { destination: b, amount: 15_000 }] },
    })));
    for (const r of answers.filter((a) => a.status === 402)) expect(r.body).toMatchObject({ code: 'balance_insufficient', payment: { status: 'failed' } });
    expect(answers.every((r) => [201, 202, 402].includes(r.status)), answers.map((r) => r.text).join('\n')).toBe(true);
    // A slow machine may answer 202 (still working): its outcome is read once the workflow is done.
    const outcomes = await Promise.all(answers.map(async (r) => (r.status === 202
      ? (await waitForPayment(http, ownKey, r.body.id, (p) => p.status !== 'processing')).status
      : r.status === 201 ? r.body.status : r.body.payment.status)));
    const won = outcomes.filter((s) => s === 'succeeded').length;
    expect(won).toBeGreaterThanOrEqual(1);
    expect(won).toBeLessThanOrEqual(3);
    expect(outcomes.filter((s) => s === 'failed')).toHaveLength(5 - won);
    const [net] = await platform.sql<{ paid: string }>(
      `select coalesce(sum(amount), 0) as paid from sandbox_gateway_transfers where merchant = $1 and status = 'paid' and reversed_at is null`, [`${accountId}:test`]);
    expect(Number(net!.paid)).toBe(won * 3_000_000);
    const { available } = await platform.paymentGateways.sandbox.balance({ merchant: `${accountId}:test`, currency: 'USD' });
    expect(available).toBe(10_000_000 - won * 3_000_000);
    expect(available).toBeGreaterThanOrEqual(0);
  });

  it('answers a balance-funded split retried with the same Idempotency-Key with the first payment', async () => {
    const headers = { 'idempotency-key': 'split-balance-replay' };
    const body = { total_amount: 12, platform_fee: 2, splits: [{ destination: 'acct_balance_replay', amount: 10 }] };
    const first = await http('/v3/payments/marketplace/split', { key, headers, body });
    expect(first.status, first.text).toBe(201);
    expect(first.body.funding).toBe('platform_balance');
    const again = await http('/v3/payments/marketplace/split', { key, headers, body });
    expect(again.status).toBe(201);
    expect(again.body.id).toBe(first.body.id);
    await platform.sql(`delete from idempotency_records where key = 'split-balance-replay'`);
    const afterLapse = await http('/v3/payments/marketplace/split', { key, headers, body });
    expect(afterLapse.status).toBe(201);
    expect(afterLapse.body).toMatchObject({ id: first.body.id, funding: 'platform_balance', split: { status: 'completed' } });
    expect(await gatewayTransfers(['acct_balance_replay'])).toHaveLength(1);
  });

  it('leaves no card number in the database, the logs or the workflow histories', async () => {
    // The logs were captured (every request logs its path at info), so their search below means something.
    expect(output.text()).toContain('/v3/payments/marketplace/split');
    expect(await findCardData(platform, ['4242424242424242', '4000000000009995'], output.text())).toEqual([]);
  });
});
