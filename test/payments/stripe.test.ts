import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GatewayRejectedError } from '../../domain/payments/gateways/types.ts';
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
    env: { STRIPE_API_KEY: 'sk_test_stripemock', STRIPE_API_BASE: mock.url },
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
      idempotencyKey: 'pay_test:charge', amount: 1000, currency: 'USD', card, customerId: null, description: 'stripe-mock', fraudProtection: false, paymentId: 'pay_test',
    });
    expect(charge.reference).toMatch(/^pi_/);
    const refund = await stripe.refund({ idempotencyKey: 're_test:refund', chargeReference: charge.reference!, amount: 400, currency: 'USD' });
    expect(refund.reference).toMatch(/^re_/);
    const transfer = await stripe.transfer({ idempotencyKey: 'tr_test:transfer', destination: 'acct_123', amount: 300, currency: 'USD', chargeReference: charge.reference!, group: 'pay_test' });
    expect(transfer).toMatchObject({ outcome: 'paid' });
    const reversal = await stripe.reverseTransfer({ idempotencyKey: 'tr_test:reversal', transferReference: (transfer as { reference: string }).reference, amount: 300 });
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
  });

  it('maps a request Stripe rejects (400) to a non-retryable gateway error, without the card data', async () => {
    const stripe = platform.paymentGateways.stripe!;
    const err = await stripe.charge({
      idempotencyKey: 'pay_bad:charge', amount: 10.5, currency: 'USD', card: { token: 'pm_123', fingerprint: '' }, customerId: null, description: null, fraudProtection: false, paymentId: 'pay_bad',
    }).then(() => null, (e: unknown) => e);
    expect(err).toBeInstanceOf(GatewayRejectedError);
    expect((err as GatewayRejectedError).message).toMatch(/^Stripe: /);
    const transfer = await stripe.transfer({ idempotencyKey: 'tr_bad:transfer', destination: 'acct_123', amount: 10.5, currency: 'usd', chargeReference: 'pi_x', group: 'g' });
    expect(transfer).toMatchObject({ outcome: 'failed' });
  });
});
