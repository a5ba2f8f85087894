import { createHmac } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { installationSecret } from '../../db/installation-settings.ts';
import { nativePool } from '../../db/pool.ts';
import { addBusinessDays, SANDBOX_TEST_CARDS } from '../../domain/payments/gateways/sandbox.ts';
import type { TestPlatform } from '../support/platform.ts';
import { captureOutput, cardBody, findCardData, waitForPayment } from './support.ts';
import { activitySteps } from '../support/histories.ts';
import { awaitPaymentOutcomeUpdate, type PaymentWorkflowInput } from '../../workflows/payments/shared.ts';
import { recordPayment } from '../../domain/payments/service.ts';
import { scopedEm } from '../../domain/scope.ts';
import { newId } from '../../platform/ids.ts';
import { usePlatform, type Http } from '../support/use-platform.ts';

let platform: TestPlatform;
let http: Http;
let key: string;
const output = captureOutput();

usePlatform({
  worker: true,
  env: { RATE_LIMIT_CONCURRENCY: '50', RATE_LIMIT_PER_MINUTE: '1000', PAYMENTS_SYNC_WAIT_MS: '6000', SANDBOX_GATEWAY_SLOW_CARD_MS: '9000', LOG_LEVEL: 'info' },
}, (t) => ({ platform, http, key } = t));
afterAll(() => output.stop());

const pay = (number: string, extra: Record<string, unknown> = {}, headers: Record<string, string> = {}) =>
  http('/v3/payments/process', { key, headers, body: { amount: 1000, currency: 'usd', payment_method: cardBody(number), description: 'Test order', ...extra } });

async function ledger(paymentId: string) {
  return platform.sql<{ status: string; attempts: number; decline_code: string | null; amount: string }>(
    'select status, attempts, decline_code, amount from sandbox_gateway_charges where idempotency_key = $1', [`${paymentId}:charge`]);
}

describe('POST /v3/payments/process with the sandbox gateway', () => {
  it('charges the success card: 201, the Payment status resource, fees, settlement in two business days, an event', async () => {
    const res = await pay('4242424242424242');
    expect(res.status).toBe(201);
    const p = res.body;
    expect(p).toMatchObject({
      object: 'payment', status: 'succeeded', amount: 1000, amount_refunded: 0, currency: 'USD', gateway: 'sandbox', livemode: false,
      payment_method: { type: 'card', card: { brand: 'visa', last4: '4242', exp_month: 12 } },
      settlement: { fees: 59 }, // 2.9 % of 1000 = 29, + 30
      risk_score: null, failure: null, description: 'Test order',
    });
    expect(p.id).toMatch(/^pay_/);
    expect(p.workflow_id).toBe(`payment-${p.id}`);
    expect(p.settlement.expected_date).toBe(addBusinessDays(new Date(p.created), 2));
    expect(res.headers.get('location')).toBe(`/v3/payments/${p.id}/status`);
    const status = await http(`/v3/payments/${p.id}/status`, { key });
    expect(status.status).toBe(200);
    expect(status.body).toEqual(p);
    expect(await ledger(p.id)).toEqual([expect.objectContaining({ status: 'succeeded', attempts: 1, amount: '1000' })]);
    const events = await platform.sql<{ type: string }>(`select type from events where data->'object'->>'id' = $1`, [p.id]);
    expect(events.map((e) => e.type)).toEqual(['payment.succeeded']);
    const handle = platform.temporal.client.workflow.getHandle(p.workflow_id);
    await handle.result();
    const desc = await handle.describe();
    expect(desc.searchAttributes).toMatchObject({ BpResourceId: [p.id], BpMode: ['test'], BpStatus: ['succeeded'] });
    // A card that answers within the request's wait: recorded and charged by local activities, the
    // whole payment one workflow task.
    const history = await handle.fetchHistory();
    expect(activitySteps(history)).toEqual([['recordPayment', 'local'], ['chargePayment', 'local']]);
    expect(history.events!.filter((e) => e.workflowTaskCompletedEventAttributes)).toHaveLength(1);
  });

  it.each([
    ['4000000000000002', 'generic_decline'],
    ['4000000000009995', 'insufficient_funds'],
    ['4000000000009987', 'lost_card'],
    ['4000000000000069', 'expired_card'],
    ['4000000000000127', 'incorrect_cvc'],
    ['4100000000000019', 'fraudulent'],
  ])('declines %s with 402 card_declined, decline_code %s, a suggestion and a failed payment', async (number, declineCode) => {
    const res = await pay(number);
    expect(res.status).toBe(402);
    expect(res.headers.get('content-type')).toContain('application/problem+json');
    expect(res.body).toMatchObject({ code: 'card_declined', decline_code: declineCode, status: 402 });
    expect(res.body.suggestion.length).toBeGreaterThan(10);
    const status = await http(`/v3/payments/${res.body.payment_id}/status`, { key });
    expect(status.body).toMatchObject({ status: 'failed', failure: { code: 'card_declined', decline_code: declineCode }, settlement: { fees: null } });
    const events = await platform.sql<{ type: string }>(`select type from events where data->'object'->>'id' = $1`, [res.body.payment_id]);
    expect(events.map((e) => e.type)).toEqual(['payment.failed']);
  });

  it('scores risk when fraud_protection is on and blocks above the threshold', async () => {
    const customer = (await http('/v3/customers', { key, body: { email: 'risk@example.com', name: 'Risk' } })).body.id;
    const blocked = await pay('4000000000004954', { fraud_protection: true, customer_id: customer });
    expect(blocked.status).toBe(402);
    expect(blocked.body.decline_code).toBe('highest_risk_level');
    expect(blocked.body.payment.risk_score).toBeGreaterThanOrEqual(75);
    const unscored = await pay('4000000000004954');
    expect(unscored.status).toBe(201);
    expect(unscored.body.risk_score).toBeNull();
    const elevated = await pay('4000000000009235', { fraud_protection: true, customer_id: customer });
    expect(elevated.status).toBe(201);
    expect(elevated.body.risk_score).toBe(65); // 5 base + 60 elevated card
    const plain = await pay('5555555555554444', { fraud_protection: true, customer_id: customer });
    expect(plain.body).toMatchObject({ status: 'succeeded', risk_score: 5, payment_method: { card: { brand: 'mastercard' } } });
    // 5 base + 40 (≥ 10,000 major units) + 10 (no customer) = 55: allowed …
    const large = await pay('378282246310005', { fraud_protection: true, amount: 1_500_000_00 });
    expect(large.body).toMatchObject({ status: 'succeeded', risk_score: 55 });
    for (let i = 0; i < 2; i++) expect((await pay('378282246310005', { customer_id: customer })).status).toBe(201);
    // … but + 30 once the same card was charged 3 times in 10 minutes: 85, blocked.
    const again = await pay('378282246310005', { fraud_protection: true, amount: 1_500_000_00 });
    expect(again.status).toBe(402);
    expect(again.body).toMatchObject({ decline_code: 'highest_risk_level', payment: { risk_score: 85 } });
  });

  it('retries the processing-error card and charges it once', async () => {
    const res = await pay('4000000000000119');
    expect(res.status).toBe(201);
    expect(res.body.status).toBe('succeeded');
    expect(await ledger(res.body.id)).toEqual([expect.objectContaining({ status: 'succeeded', attempts: 2 })]);
  });

  it('answers the slow card with 202 processing, then the status endpoint shows succeeded', async () => {
    const res = await pay('4000000000007775');
    expect(res.status).toBe(202);
    expect(res.body).toMatchObject({ status: 'processing', settlement: { expected_date: null, fees: null } });
    expect(res.headers.get('location')).toBe(`/v3/payments/${res.body.id}/status`);
    expect(res.body.workflow_id).toBe(`payment-${res.body.id}`);
    // A later wait for the outcome (a retried start) waits its own time, not the local attempt's.
    const handle = platform.temporal.client.workflow.getHandle(res.body.workflow_id);
    const outcome = await handle.executeUpdate(awaitPaymentOutcomeUpdate, { args: [{ waitMs: 6000 }] });
    expect(outcome.status).toBe('succeeded');
    const done = await waitForPayment(http, key, res.body.id, (p) => p.status !== 'processing');
    expect(done.status).toBe('succeeded');
    expect(await ledger(res.body.id)).toHaveLength(1);
    // The local attempt ran out with the request's wait; the charge activity finished the same charge.
    await handle.result();
    expect(activitySteps(await handle.fetchHistory())).toEqual([['recordPayment', 'local'], ['chargePayment', 'local'], ['chargePayment', 'activity']]);
  });

  it('keeps a payment processing through a gateway outage and completes it once the gateway is back', async () => {
    platform.paymentGateways.sandbox.simulateOutage(true);
    try {
      const res = await pay('4242424242424242', { amount: 777 });
      expect(res.status).toBe(202);
      expect(res.body.status).toBe('processing');
      expect(await ledger(res.body.id)).toHaveLength(0);
      const still = await http(`/v3/payments/${res.body.id}/status`, { key });
      expect(still.body.status).toBe('processing');
      platform.paymentGateways.sandbox.simulateOutage(false);
      const done = await waitForPayment(http, key, res.body.id, (p) => p.status !== 'processing');
      expect(done.status).toBe('succeeded');
      expect(await ledger(res.body.id)).toHaveLength(1);
    } finally {
      platform.paymentGateways.sandbox.simulateOutage(false);
    }
  });

  it('rejects bad card fields with 422 naming every field, before anything reaches the gateway', async () => {
    const before = await platform.sql<{ n: string }>('select count(*) as n from sandbox_gateway_tokens');
    const res = await http('/v3/payments/process', {
      key,
      body: {
        amount: 1000, currency: 'XBT',
        payment_method: { type: 'card', card: { number: '4242424242424241', exp_month: 1, exp_year: 2020, cvc: '12' } },
      },
    });
    expect(res.status).toBe(422);
    expect(res.body.code).toBe('validation_failed');
    const paths = res.body.errors.map((e: { path: string }) => e.path).sort();
    expect(paths).toEqual(['currency', 'payment_method.card.cvc', 'payment_method.card.exp_year', 'payment_method.card.number']);
    expect(res.text).not.toContain('4242424242424241');
    const amex = await pay('378282246310005', { payment_method: cardBody('378282246310005', { cvc: '123' }), amount: 10.5 });
    expect(amex.status).toBe(422);
    expect(amex.body.errors.map((e: { path: string }) => e.path).sort()).toEqual(['amount', 'payment_method.card.cvc']);
    expect(await platform.sql<{ n: string }>('select count(*) as n from sandbox_gateway_tokens')).toEqual(before);
  });

  it('answers 404 for an unknown payment and for another account\'s payment', async () => {
    expect((await http('/v3/payments/pay_01jzzzzzzzzzzzzzzzzzzzzzzz/status', { key })).status).toBe(404);
    const mine = await pay('4242424242424242');
    const otherKey = await platform.newKey({ accountId: await platform.newAccount() });
    const theirs = await http(`/v3/payments/${mine.body.id}/status`, { key: otherKey });
    expect(theirs.status).toBe(404);
    expect(theirs.body.code).toBe('not_found');
    const liveKey = await platform.newKey({ type: 'live' });
    expect((await http(`/v3/payments/${mine.body.id}/status`, { key: liveKey })).status).toBe(404);
  });

  it('refuses live-mode payments with 503 gateway_not_configured when no live gateway is configured (never the sandbox)', async () => {
    expect(platform.paymentGateways.liveDefault).toBeNull();
    const liveKey = await platform.newKey({ type: 'live' });
    const before = await platform.sql<{ n: string }>('select count(*) as n from sandbox_gateway_tokens');
    const res = await http('/v3/payments/process', { key: liveKey, body: { amount: 1000, currency: 'USD', payment_method: cardBody('4242424242424242') } });
    expect(res.status).toBe(503);
    expect(res.body).toMatchObject({ code: 'gateway_not_configured', detail: expect.stringContaining('nothing was charged') });
    expect(res.headers.get('retry-after')).toBe('60');
    expect(await platform.sql('select id from payments where livemode')).toEqual([]);
    expect(await platform.sql<{ n: string }>('select count(*) as n from sandbox_gateway_tokens')).toEqual(before);
  });

  it('keys card fingerprints with a secret generated once per installation and kept in the database', async () => {
    expect((await pay('4000000000009235')).status).toBe(201);
    const [setting] = await platform.sql<{ value: string }>("select value from installation_settings where name = 'card_fingerprint_key'");
    expect(setting!.value).toMatch(/^[\w-]{43}$/); // 32 random bytes
    const [token] = await platform.sql<{ fingerprint: string }>("select fingerprint from sandbox_gateway_tokens where last4 = '9235' limit 1");
    expect(token!.fingerprint).toBe(createHmac('sha256', setting!.value).update('4000000000009235').digest('base64url').slice(0, 16));
    // Processes starting at once agree on one value: the first insert wins, every caller reads it back.
    const pool = await nativePool(platform.orm);
    const values = await Promise.all(Array.from({ length: 8 }, () => installationSecret(pool, 'test_concurrent_secret')));
    expect(new Set(values).size).toBe(1);
    expect(await platform.sql("select value from installation_settings where name = 'test_concurrent_secret'")).toEqual([{ value: values[0] }]);
    expect(await installationSecret(pool, 'card_fingerprint_key')).toBe(setting!.value);
  });

  it('needs payments:write to charge and payments:read to look', async () => {
    const reader = await platform.newKey({ type: 'restricted', mode: 'test', permissions: ['payments:read'] } as never);
    const res = await http('/v3/payments/process', { key: reader, body: { amount: 100, currency: 'USD', payment_method: cardBody('4242424242424242') } });
    expect(res.status).toBe(403);
    expect(res.body.detail).toContain('payments:write');
  });

  it('charges once for ten concurrent requests with one Idempotency-Key', async () => {
    const headers = { 'idempotency-key': 'pay-concurrent-1' };
    const body = { amount: 4321, currency: 'EUR', payment_method: cardBody('4242424242424242') };
    const results = await Promise.all(Array.from({ length: 10 }, () => http('/v3/payments/process', { key, headers, body })));
    const created = results.filter((r) => r.status === 201);
    // The others are told the first is still running (409), or get its response replayed (201).
    const others = results.filter((r) => r.status !== 201);
    for (const r of others) expect(r.body.code, r.text).toBe('idempotency_key_in_use');
    expect(created.length).toBeGreaterThanOrEqual(1);
    const rows = await platform.sql<{ id: string }>(`select id from payments where request_idempotency_key = 'pay-concurrent-1'`);
    expect(rows).toHaveLength(1);
    expect(await ledger(rows[0]!.id)).toHaveLength(1);
    expect(await platform.sql(`select 1 from sandbox_gateway_charges where amount = 4321 and currency = 'EUR'`)).toHaveLength(1);
    const replay = await http('/v3/payments/process', { key, headers, body });
    expect(replay.status).toBe(201);
    expect(replay.body.id).toBe(rows[0]!.id);
  });
});

describe('recording a payment (the workflow\'s first step)', () => {
  const input = (accountId: string, over: Partial<PaymentWorkflowInput> = {}): PaymentWorkflowInput => ({
    paymentId: newId('payment'), accountId, livemode: false, kind: 'charge', amount: 1500, currency: 'USD', gateway: 'sandbox',
    card: { token: 'tok_record', fingerprint: 'fp_record', brand: 'visa', last4: '4242', expMonth: 12, expYear: 2031 },
    customerId: null, description: 'recorded', fraudProtection: false, metadata: { ref: 'r1' },
    requestIdempotencyKey: `key-${newId('payment')}`, requestId: null, ...over,
  });
  const record = (i: PaymentWorkflowInput) => (recorded.push(i.paymentId), recordPayment(scopedEm(platform.orm, { accountId: i.accountId, livemode: i.livemode }), i, `payment-${i.paymentId}`));
  const rows = (id: string) => platform.sql('select id from payments where id = $1', [id]);
  const recorded: string[] = [];
  // These payments have no workflow (the card-data check below reads every payment's history).
  afterAll(async () => {
    await platform.sql('delete from payment_transfers where payment_id = any($1)', [recorded]);
    await platform.sql('delete from payments where id = any($1)', [recorded]);
  });

  it('writes once: a retry of the step answers the payment as first written, a second payment for the same request key is refused', async () => {
    const accountId = await platform.newAccount();
    const first = input(accountId);
    const written = await record(first);
    expect(written).toMatchObject({ id: first.paymentId, status: 'processing', amount: 1500, metadata: { ref: 'r1' }, payment_method: { card: { last4: '4242' } } });
    expect(await record(first)).toEqual(written);
    expect(await rows(first.paymentId)).toHaveLength(1);
    const second = input(accountId, { requestIdempotencyKey: first.requestIdempotencyKey });
    await expect(record(second)).rejects.toMatchObject({ name: 'DuplicatePaymentError', existingPaymentId: first.paymentId });
    expect(await rows(second.paymentId)).toEqual([]);
  });

  it('writes a split with its transfers once, also when retried', async () => {
    const accountId = await platform.newAccount();
    const split = input(accountId, {
      kind: 'marketplace_split',
      split: {
        requestedFee: 100, platformFee: 100, roundingRemainder: 0, compensationRefundId: newId('refund'),
        transfers: [{ id: newId('transfer'), destination: 'acct_a', amount: 700 }, { id: newId('transfer'), destination: 'acct_b', amount: 700 }],
      },
    });
    const written = await record(split);
    expect(written.split).toMatchObject({ status: 'pending', transfers: [{ destination: 'acct_a', status: 'pending' }, { destination: 'acct_b', status: 'pending' }] });
    expect(await record(split)).toEqual(written);
    expect(await platform.sql('select id from payment_transfers where payment_id = $1', [split.paymentId])).toHaveLength(2);
  });
});

describe('POST /v3/payments/{id}/refunds', () => {
  it('refunds in part, refuses more than remains, then refunds the rest', async () => {
    const p = (await pay('4242424242424242', { amount: 1000 })).body;
    const part = await http(`/v3/payments/${p.id}/refunds`, { key, body: { amount: 400, reason: 'requested_by_customer' } });
    expect(part.status).toBe(201);
    expect(part.body).toMatchObject({ object: 'refund', payment_id: p.id, amount: 400, status: 'succeeded', currency: 'USD' });
    expect((await http(`/v3/payments/${p.id}/status`, { key })).body).toMatchObject({ status: 'partially_refunded', amount_refunded: 400 });
    const tooMuch = await http(`/v3/payments/${p.id}/refunds`, { key, body: { amount: 601 } });
    expect(tooMuch.status).toBe(422);
    expect(tooMuch.body).toMatchObject({ code: 'refund_exceeds_remaining', remaining: 600 });
    const rest = await http(`/v3/payments/${p.id}/refunds`, { key, body: {} });
    expect(rest.status).toBe(201);
    expect(rest.body.amount).toBe(600);
    expect((await http(`/v3/payments/${p.id}/status`, { key })).body).toMatchObject({ status: 'refunded', amount_refunded: 1000 });
    const got = await http(`/v3/payments/${p.id}/refunds/${part.body.id}`, { key });
    expect(got.body).toEqual(part.body);
    const events = await platform.sql<{ type: string }>(`select type from events where data->'object'->>'id' = $1 order by id`, [p.id]);
    expect(events.map((e) => e.type)).toEqual(['payment.succeeded', 'payment.refunded', 'payment.refunded']);
    const gatewayRefunded = await platform.sql<{ amount_refunded: string }>('select amount_refunded from sandbox_gateway_charges where idempotency_key = $1', [`${p.id}:charge`]);
    expect(gatewayRefunded[0]!.amount_refunded).toBe('1000');
  });

  it('never refunds more than was paid under concurrent refunds', async () => {
    const p = (await pay('4242424242424242', { amount: 1000 })).body;
    const results = await Promise.all(Array.from({ length: 6 }, () => http(`/v3/payments/${p.id}/refunds`, { key, body: { amount: 300 } })));
    // Exactly three are accepted: 201 when the gateway answered within the wait, else 202 while the
    // refund completes in its workflow. The other three are refused.
    const answers = results.map((r) => (r.status === 202 ? 201 : r.status) + ' ' + (r.body.code ?? 'accepted')).sort();
    expect(answers, results.map((r) => r.text).join('\n')).toEqual([
      '201 accepted', '201 accepted', '201 accepted',
      '422 refund_exceeds_remaining', '422 refund_exceeds_remaining', '422 refund_exceeds_remaining',
    ]);
    const done = await waitForPayment(http, key, p.id, (body) => body.status === 'partially_refunded' && body.amount_refunded === 900);
    expect(done.amount_refunded).toBe(900);
    const [row] = await platform.sql<{ amount_refunded: string }>('select amount_refunded from payments where id = $1', [p.id]);
    expect(row!.amount_refunded).toBe('900');
  });

  it('refuses to refund a failed payment (409) and an unknown one (404)', async () => {
    const failed = await pay('4000000000000002');
    const res = await http(`/v3/payments/${failed.body.payment_id}/refunds`, { key, body: {} });
    expect(res.status).toBe(409);
    expect(res.body.code).toBe('payment_not_refundable');
    expect((await http('/v3/payments/pay_01jzzzzzzzzzzzzzzzzzzzzzzz/refunds', { key, body: {} })).status).toBe(404);
  });
});

describe('card data', () => {
  it('leaves no full card number or CVC in the database, the logs or any workflow history', async () => {
    const numbers = SANDBOX_TEST_CARDS.map((c) => c.number).concat(['4242424242424241']);
    const found = await findCardData(platform, numbers, output.text());
    expect(found).toEqual([]);
    const cvcFields = await findCardData(platform, ['"cvc"'], output.text());
    expect(cvcFields).toEqual([]);
    expect(output.text()).toContain('/v3/payments/process'); // the logs were captured
  });
});
