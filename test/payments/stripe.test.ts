import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StripeGateway } from '../../domain/payments/gateways/stripe.ts';
import { GatewayRejectedError } from '../../domain/payments/gateways/types.ts';
import { ApiError } from '../../platform/errors.ts';
import { startStripeMock, type RunningStripeMock } from '../../platform/stripe-mock.ts';
import { client } from '../support/http.ts';
import { startTestPlatform, type TestPlatform } from '../support/platform.ts';
import { cardBody } from './support.ts';

let mock: RunningStripeMock;
let platform: TestPlatform;
let http: ReturnType<typeof client>;
const calls: { method: string; path: string; status: number; idempotencyKey: string | null }[] = [];

beforeAll(async () => {
  mock = await startStripeMock();
  platform = await startTestPlatform({
    worker: true,
    // The development setting lets an account's live payments use the sandbox (the per-account choice below).
    env: { STRIPE_API_KEY: 'sk_test_stripemock', STRIPE_API_BASE: mock.url, PAYMENTS_LIVE_SANDBOX: 'true' },
  });
  platform.paymentGateways.stripe!.onResponse((e) => calls.push(e));
  http = client(platform.url);
});
afterAll(async () => {
  await platform?.close();
  await mock?.stop();
});

describe('the Stripe adapter against stripe-mock', () => {
  it('is the live-mode default when STRIPE_API_KEY is set; test mode stays on the sandbox', () => {
    expect(platform.paymentGateways.liveDefault).toBe('stripe');
  });

  it('sends valid PaymentMethod, PaymentIntent, Refund, Transfer and reversal requests, with idempotency keys', async () => {
    const stripe = platform.paymentGateways.stripe!;
    calls.length = 0;
    const card = await stripe.tokenizeCard({ number: '4242 4242 4242 4242', exp_month: 12, exp_year: 2030, cvc: '123' });
    expect(card.token).toMatch(/^pm_/);
    expect(card).toMatchObject({ brand: 'visa', last4: '4242' });
    const charge = await stripe.charge({
      idempotencyKey: 'pay_test:charge', merchant: 'acct_stripemock:test', amount: 1000, currency: 'USD', card, customerId: null, description: 'stripe-mock', fraudProtection: false, paymentId: 'pay_test',
    });
    expect(charge.reference).toMatch(/^pi_/);
    const refund = await stripe.refund({ idempotencyKey: 're_test:refund', chargeReference: charge.reference!, amount: 400, currency: 'USD' });
    expect(refund.reference).toMatch(/^re_/);
    const transfer = await stripe.transfer({ idempotencyKey: 'tr_test:transfer', merchant: 'acct_stripemock:test', destination: 'acct_123', amount: 300, currency: 'USD', chargeReference: charge.reference!, group: 'pay_test' });
    expect(transfer).toMatchObject({ outcome: 'paid' });
    const reversal = await stripe.reverseTransfer({ idempotencyKey: 'tr_test:reversal', transferReference: (transfer as { reference: string }).reference, amount: 300, currency: 'USD' });
    expect(reversal.reference).toMatch(/^trr_/);

    expect(calls.map((c) => `${c.method} ${c.path.replace(/\/tr_\w+\//, '/{id}/')} ${c.status}`)).toEqual([
      'POST /v1/payment_methods 200',
      'POST /v1/payment_intents 200',
      'POST /v1/refunds 200',
      'POST /v1/transfers 200',
      'POST /v1/transfers/{id}/reversals 200',
    ]);
    expect(calls.slice(1).map((c) => c.idempotencyKey)).toEqual(['pay_test:charge', 're_test:refund', 'tr_test:transfer', 'tr_test:reversal']);
  });

  it('charges through Stripe for a live key: the request reaches stripe-mock and the payment records it', async () => {
    calls.length = 0;
    const live = await platform.newKey({ type: 'live' });
    const res = await http('/v3/payments/process', { key: live, body: { amount: 2500, currency: 'eur', payment_method: cardBody('4242424242424242') } });
    // stripe-mock answers every PaymentIntent with the same fixture (status requires_payment_method),
    // which the adapter reports as a decline; what matters here is that Stripe accepted the requests.
    expect([201, 402]).toContain(res.status);
    const payment = res.status === 201 ? res.body : res.body.payment;
    expect(payment).toMatchObject({ gateway: 'stripe', amount: 2500, currency: 'EUR', livemode: true });
    const [row] = await platform.sql<{ gateway_reference: string }>('select gateway_reference from payments where id = $1', [payment.id]);
    expect(row!.gateway_reference).toMatch(/^pi_/);
    expect(calls.map((c) => `${c.path} ${c.status}`)).toEqual(['/v1/payment_methods 200', '/v1/payment_intents 200']);
    expect(calls[1]!.idempotencyKey).toBe(`${payment.id}:charge`);
    const test = await http('/v3/payments/process', { key: await platform.newKey(), body: { amount: 2500, currency: 'eur', payment_method: cardBody('4242424242424242') } });
    expect(test.body).toMatchObject({ status: 'succeeded', gateway: 'sandbox' });
  });

  it('funds a live split without a card from the Stripe balance: GET /v1/balance first, and nothing moves when it is short', async () => {
    calls.length = 0;
    const live = await platform.newKey({ type: 'live' });
    const { available } = await platform.paymentGateways.stripe!.balance({ merchant: 'any', currency: 'USD' });
    calls.length = 0;
    // More than stripe-mock's fixed balance: refused before any transfer.
    const total = available / 100 + 50;
    const res = await http('/v3/payments/marketplace/split', { key: live, body: { total_amount: total, platform_fee: 0, splits: [{ destination: 'acct_live_seller', amount: total }] } });
    expect(res.status, res.text).toBe(402);
    expect(res.body).toMatchObject({
      code: 'balance_insufficient', available,
      payment: { gateway: 'stripe', livemode: true, funding: 'platform_balance', payment_method: null, status: 'failed', split: { status: 'canceled' } },
    });
    expect(calls.map((c) => `${c.method} ${c.path} ${c.status}`)).toEqual(['GET /v1/balance 200']);
  });

  it('lets an admin put one account\'s live payments on the sandbox (per-account gateway choice)', async () => {
    const accountId = await platform.newAccount();
    const admin = await http('/admin/trpc/payments.setLiveGateway', {
      headers: { authorization: 'Bearer test-admin-token-0123456789' }, body: { accountId, gateway: 'sandbox' },
    });
    expect(admin.status).toBe(200);
    const live = await platform.newKey({ type: 'live', accountId });
    const res = await http('/v3/payments/process', { key: live, body: { amount: 1200, currency: 'USD', payment_method: cardBody('4242424242424242') } });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ gateway: 'sandbox', livemode: true, status: 'succeeded' });

    // Without PAYMENTS_LIVE_SANDBOX (production) the same choice is refused, never charged on the sandbox.
    platform.paymentGateways.liveSandboxAllowed = false;
    try {
      const refused = await http('/v3/payments/process', { key: live, body: { amount: 1200, currency: 'USD', payment_method: cardBody('4242424242424242') } });
      expect(refused.status).toBe(503);
      expect(refused.body).toMatchObject({ code: 'gateway_not_configured', suggestion: expect.stringContaining('PAYMENTS_LIVE_SANDBOX') });
      expect(refused.headers.get('retry-after')).toBe('60');
    } finally {
      platform.paymentGateways.liveSandboxAllowed = true;
    }
  });

  it('maps a request Stripe rejects (400) to a non-retryable gateway error, without the card data', async () => {
    const stripe = platform.paymentGateways.stripe!;
    const err = await stripe.charge({
      idempotencyKey: 'pay_bad:charge', merchant: 'acct_stripemock:test', amount: 10.5, currency: 'USD', card: { token: 'pm_123', fingerprint: '' }, customerId: null, description: null, fraudProtection: false, paymentId: 'pay_bad',
    }).then(() => null, (e: unknown) => e);
    expect(err).toBeInstanceOf(GatewayRejectedError);
    expect((err as GatewayRejectedError).message).toMatch(/^Stripe: /);
    const transfer = await stripe.transfer({ idempotencyKey: 'tr_bad:transfer', merchant: 'acct_stripemock:test', destination: 'acct_123', amount: 10.5, currency: 'usd', chargeReference: 'pi_x', group: 'g' });
    expect(transfer).toMatchObject({ outcome: 'failed' });
  });
});

/** A proxy in front of stripe-mock that records each request's form body (what the adapter sent). */
async function recordingProxy(target: string): Promise<{ url: string; bodies: { path: string; form: URLSearchParams }[]; close(): Promise<void> }> {
  const bodies: { path: string; form: URLSearchParams }[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString();
      bodies.push({ path: req.url ?? '', form: new URLSearchParams(body) });
      const headers = Object.fromEntries(Object.entries(req.headers).filter(([k]) => !['host', 'content-length', 'connection'].includes(k))) as Record<string, string>;
      fetch(new URL(req.url ?? '/', target), { method: req.method, headers, body: req.method === 'GET' ? undefined : body })
        .then(async (answer) => {
          res.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'application/json' });
          res.end(Buffer.from(await answer.arrayBuffer()));
        })
        .catch(() => { res.writeHead(502); res.end(); });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    bodies,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe('Stripe amounts on the wire', () => {
  it('sends ISK and UGX ×100 and other currencies unchanged, for charges, refunds, transfers and reversals', async () => {
    const proxy = await recordingProxy(mock.url);
    try {
      const stripe = new StripeGateway({ apiKey: 'sk_test_stripemock', apiBase: proxy.url });
      const card = { token: 'pm_card_visa', fingerprint: '' };
      const charge = (currency: string, amount: number) => stripe.charge({
        idempotencyKey: `pay_${currency}:charge`, merchant: 'acct_stripemock:test', amount, currency, card, customerId: null, description: null, fraudProtection: false, paymentId: `pay_${currency}`,
      });
      await charge('ISK', 500);
      await charge('JPY', 500);
      await charge('HUF', 1000);
      await stripe.refund({ idempotencyKey: 're_isk:refund', chargeReference: 'pi_123', amount: 200, currency: 'ISK' });
      const transfer = await stripe.transfer({ idempotencyKey: 'tr_ugx:transfer', merchant: 'acct_stripemock:test', destination: 'acct_123', amount: 300, currency: 'UGX', chargeReference: 'pi_123', group: 'g' });
      expect(transfer).toMatchObject({ outcome: 'paid' });
      await stripe.reverseTransfer({ idempotencyKey: 'tr_ugx:reversal', transferReference: (transfer as { reference: string }).reference, amount: 100, currency: 'UGX' });

      expect(proxy.bodies.map((b) => [b.path.replace(/\/tr_\w+\//, '/{id}/'), b.form.get('amount'), b.form.get('currency')])).toEqual([
        ['/v1/payment_intents', '50000', 'isk'],
        ['/v1/payment_intents', '500', 'jpy'],
        ['/v1/payment_intents', '1000', 'huf'],
        ['/v1/refunds', '20000', null],
        ['/v1/transfers', '30000', 'ugx'],
        ['/v1/transfers/{id}/reversals', '10000', null],
      ]);

      // HUF and TWD with a fractional part: refused with 422 before Stripe is called.
      proxy.bodies.length = 0;
      for (const attempt of [
        () => charge('HUF', 1050),
        () => stripe.refund({ idempotencyKey: 're_twd:refund', chargeReference: 'pi_123', amount: 1, currency: 'TWD' }),
        () => stripe.transfer({ idempotencyKey: 'tr_huf:transfer', merchant: 'acct_stripemock:test', destination: 'acct_123', amount: 150, currency: 'HUF', chargeReference: 'pi_123', group: 'g' }),
      ]) {
        const err = await attempt().then(() => null, (e: unknown) => e);
        expect(err).toBeInstanceOf(ApiError);
        expect(err).toMatchObject({ status: 422, code: 'validation_failed' });
      }
      expect(proxy.bodies).toEqual([]);
    } finally {
      await proxy.close();
    }
  });

  it('pays a balance-funded transfer with no source_transaction (a card-funded one names its charge), and reads the balance from GET /v1/balance', async () => {
    const proxy = await recordingProxy(mock.url);
    try {
      const stripe = new StripeGateway({ apiKey: 'sk_test_stripemock', apiBase: proxy.url });
      const transfer = await stripe.transfer({
        idempotencyKey: 'tr_balance:transfer', merchant: 'acct_stripemock:live', destination: 'acct_123', amount: 700, currency: 'USD', chargeReference: null, group: 'pay_balance',
      });
      expect(transfer).toMatchObject({ outcome: 'paid', reference: expect.stringMatching(/^tr_/) });
      const { available } = await stripe.balance({ merchant: 'acct_stripemock:live', currency: 'USD' });
      expect(Number.isInteger(available)).toBe(true);
      expect(proxy.bodies.map((b) => b.path)).toEqual(['/v1/transfers', '/v1/balance']);
      const form = proxy.bodies[0]!.form;
      expect(Object.fromEntries(form)).toMatchObject({ amount: '700', currency: 'usd', destination: 'acct_123', transfer_group: 'pay_balance' });
      expect(form.has('source_transaction')).toBe(false);

      // A card-funded split's transfer names its charge as source_transaction (a ch_…; a PaymentIntent id is not a charge).
      proxy.bodies.length = 0;
      for (const [i, chargeReference] of ['ch_3MmlLrLkdIwHu7ix0snN0B15', 'pi_123'].entries()) {
        await stripe.transfer({ idempotencyKey: `tr_card_${i}:transfer`, merchant: 'acct_stripemock:live', destination: 'acct_123', amount: 700, currency: 'USD', chargeReference, group: 'pay_card' });
      }
      expect(proxy.bodies.map((b) => b.form.get('source_transaction'))).toEqual(['ch_3MmlLrLkdIwHu7ix0snN0B15', null]);
    } finally {
      await proxy.close();
    }
  });

  it('answers 422 to a live HUF payment in fractional forints, before any Stripe call', async () => {
    calls.length = 0;
    const live = await platform.newKey({ type: 'live' });
    const res = await http('/v3/payments/process', { key: live, body: { amount: 1050, currency: 'HUF', payment_method: cardBody('4242424242424242') } });
    expect(res.status).toBe(422);
    expect(res.body).toMatchObject({ code: 'validation_failed', errors: [{ path: 'amount', message: expect.stringContaining('whole units') }] });
    expect(calls).toEqual([]);
    // The sandbox (test mode) takes the same amount: the rule is Stripe's.
    const test = await http('/v3/payments/process', { key: await platform.newKey(), body: { amount: 1050, currency: 'HUF', payment_method: cardBody('4242424242424242') } });
    expect(test.body).toMatchObject({ status: 'succeeded', gateway: 'sandbox', amount: 1050 });
  });
});
