import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client } from '../support/http.ts';
import { startTestPlatform, type TestPlatform } from '../support/platform.ts';
import { startAdyenDouble, startPayPalDouble, type Double } from './gateway-doubles.ts';
import { advance, invoices, newClock, newCustomer, newPlan } from '../billing/support.ts';
import { cardBody, waitForPayment } from './support.ts';

/**
 * Gateway routing through HTTP: rules by currency, amount and card brand choose Adyen or PayPal
 * (their test environments, here local doubles), a gateway that is down before the charge fails
 * over to the next, and a charge whose outcome is unknown stays with its gateway.
 */
let platform: TestPlatform;
let http: ReturnType<typeof client>;
let key: string;
let adyen: Double;
let paypal: Double;

beforeAll(async () => {
  adyen = await startAdyenDouble({ apiKey: 'AQE-routing-key', merchantAccount: 'RoutingECOM' });
  paypal = await startPayPalDouble({ clientId: 'routing-id', clientSecret: 'routing-secret' });
  platform = await startTestPlatform({
    worker: true,
    env: {
      ADYEN_API_KEY: 'AQE-routing-key', ADYEN_MERCHANT_ACCOUNT: 'RoutingECOM', ADYEN_CHECKOUT_BASE: adyen.url,
      PAYPAL_CLIENT_ID: 'routing-id', PAYPAL_CLIENT_SECRET: 'routing-secret', PAYPAL_API_BASE: paypal.url, PAYMENTS_SYNC_WAIT_MS: '1500',
      // Stripe with a test key whose API is down (nothing listens on port 9): a gateway to fail over from.
      STRIPE_API_KEY: 'sk_test_routing_down', STRIPE_API_BASE: 'http://127.0.0.1:9',
    },
  });
  http = client(platform.url);
  key = await platform.newKey({ accountId: await platform.newAccount() });
});
afterAll(async () => {
  await platform?.close();
  await adyen?.close();
  await paypal?.close();
});

const pay = (amount: number, currency: string, number = '4111111111111111') =>
  http('/v3/payments/process', { key, body: { amount, currency, payment_method: cardBody(number) } });

describe('gateway routing rules', () => {
  it('validates rules, then routes by currency, amount and card brand, with the reason on the payment', async () => {
    const bad = await http('/v3/payments/routing_rules', {
      key, body: { name: 'Bad', conditions: { amount_gte: 500, amount_lte: 100, currencies: ['euro'] }, gateways: ['adyen', 'adyen', 'worldpay'] },
    });
    expect(bad.status).toBe(422);
    expect(bad.body.errors.map((e: { path: string }) => e.path).sort()).toEqual(['conditions.amount_lte', 'conditions.currencies.0', 'gateways.2']);
    const dup = await http('/v3/payments/routing_rules', { key, body: { name: 'Dup', gateways: ['adyen', 'adyen'] } });
    expect(dup.body.errors).toEqual([{ path: 'gateways', message: 'name each gateway once' }]);

    const big = await http('/v3/payments/routing_rules', {
      key, body: { name: 'Big EUR to Adyen', conditions: { currencies: ['eur'], amount_gte: 10_000 }, gateways: ['adyen', 'paypal'] },
    });
    expect(big.status, big.text).toBe(201);
    expect(big.body).toMatchObject({ object: 'routing_rule', priority: 100, conditions: { currencies: ['EUR'], amount_gte: 10_000 }, gateways: ['adyen', 'paypal'], enabled: true });
    const amex = await http('/v3/payments/routing_rules', { key, body: { name: 'Amex to PayPal', priority: 50, conditions: { card_brands: ['amex'] }, gateways: ['paypal'] } });
    expect(amex.status).toBe(201);

    const toAdyen = await pay(15_000, 'EUR');
    expect(toAdyen.status, toAdyen.text).toBe(201);
    expect(toAdyen.body).toMatchObject({ status: 'succeeded', gateway: 'adyen', routing: { rule_id: big.body.id, failed_over: [] } });
    expect(toAdyen.body.routing.reason).toContain('Big EUR to Adyen');
    expect(adyen.requests.some((r) => r.body?.reference === toAdyen.body.id)).toBe(true);

    const toSandbox = await pay(15_000, 'USD');
    expect(toSandbox.body).toMatchObject({ gateway: 'sandbox', routing: { rule_id: null, reason: 'test mode: the sandbox (no routing rule matched)' } });
    const small = await pay(500, 'EUR');
    expect(small.body.gateway).toBe('sandbox');

    const toPayPal = await pay(500, 'EUR', '378282246310005');
    expect(toPayPal.status, toPayPal.text).toBe(201);
    expect(toPayPal.body).toMatchObject({ gateway: 'paypal', routing: { rule_id: amex.body.id }, payment_method: { card: { brand: 'amex', last4: '0005' } } });
    expect((await http(`/v3/payments/${toPayPal.body.id}/status`, { key })).body.routing.rule_id).toBe(amex.body.id);

    const disabled = await http(`/v3/payments/routing_rules/${amex.body.id}`, { key, method: 'PATCH', body: { enabled: false } });
    expect(disabled.body.enabled).toBe(false);
    expect((await pay(500, 'EUR', '378282246310005')).body.gateway).toBe('sandbox');
    expect((await http('/v3/payments/routing_rules/rrule_nope', { key })).status).toBe(404);
  });

  it('fails over when the chosen gateway is down before the charge, never after an ambiguous attempt', async () => {
    adyen.setDown(true);
    try {
      const failedOver = await pay(20_000, 'EUR');
      expect(failedOver.status, failedOver.text).toBe(201);
      expect(failedOver.body).toMatchObject({ status: 'succeeded', gateway: 'paypal', routing: { failed_over: [{ gateway: 'adyen' }] } });
      expect(failedOver.body.routing.reason).toMatch(/failed over to paypal$/);
    } finally {
      adyen.setDown(false);
    }

    // Adyen tokenizes, then its charge answers 500: the outcome is unknown, so the payment stays with
    // Adyen (retried there with the same idempotency key) and PayPal never sees it.
    const ambiguous = await pay(50_300, 'EUR');
    expect(ambiguous.status, ambiguous.text).toBe(202);
    expect(ambiguous.body).toMatchObject({ status: 'processing', gateway: 'adyen', routing: { failed_over: [] } });
    const charges = adyen.requests.filter((r) => r.body?.reference === ambiguous.body.id);
    expect(charges.length).toBeGreaterThanOrEqual(1);
    expect(new Set(charges.map((r) => r.headers['idempotency-key'])).size).toBe(1);
    expect(paypal.requests.some((r) => r.body?.purchase_units?.[0]?.custom_id === ambiguous.body.id)).toBe(false);
  });
});

/** A fresh account (its own rules) and a key for it. */
async function ownAccount(type: 'test' | 'live' = 'test'): Promise<{ accountId: string; key: string }> {
  const accountId = await platform.newAccount();
  return { accountId, key: await platform.newKey({ accountId, type }) };
}

async function rule(ownKey: string, body: Record<string, unknown>): Promise<string> {
  const res = await http('/v3/payments/routing_rules', { key: ownKey, body });
  expect(res.status, res.text).toBe(201);
  return res.body.id;
}

const splitOf = (ownKey: string, body: Record<string, unknown>) => http('/v3/payments/marketplace/split', { key: ownKey, body });
const adyenSaw = (paymentId: string) => adyen.requests.some((r) => r.body?.reference === paymentId);
const paypalSaw = (paymentId: string) => paypal.requests.some((r) => r.body?.purchase_units?.[0]?.custom_id === paymentId);

describe('routing marketplace splits and saved cards', () => {
  it('routes a split among the gateways that make transfers: Adyen and PayPal are skipped, a gateway down before anything moved is failed over', async () => {
    const own = await ownAccount();
    const amexRule = await rule(own.key, { name: 'Amex to PayPal', priority: 5, conditions: { card_brands: ['amex'] }, gateways: ['paypal'] });
    const gbpRule = await rule(own.key, { name: 'GBP splits', priority: 10, conditions: { currencies: ['GBP'] }, gateways: ['adyen', 'stripe', 'sandbox'] });
    expect(amexRule).not.toBe(gbpRule);

    // An Amex card: the Amex rule matches but names no gateway with transfers (passed over); the GBP
    // rule's Adyen is skipped, its Stripe is down at tokenization (nothing charged): the sandbox takes it.
    const byCard = await splitOf(own.key, {
      currency: 'GBP', total_amount: 20, platform_fee: 2, payment_method: cardBody('378282246310005'), splits: [{ destination: 'acct_route_a', amount: 18 }],
    });
    expect(byCard.status, byCard.text).toBe(201);
    expect(byCard.body).toMatchObject({
      status: 'succeeded', gateway: 'sandbox', funding: 'card', split: { status: 'completed', transfers: [{ destination: 'acct_route_a', status: 'paid' }] },
      routing: { rule_id: gbpRule, failed_over: [{ gateway: 'stripe' }] },
    });
    expect(byCard.body.routing.reason).toContain('rule "GBP splits" (currency in GBP)');
    expect(byCard.body.routing.reason).toContain('skipped adyen: transfers_not_supported');
    expect(byCard.body.routing.reason).toContain('passed over rule "Amex to PayPal" (paypal: transfers_not_supported)');
    expect(byCard.body.routing.reason).toMatch(/failed over to sandbox$/);
    expect(adyenSaw(byCard.body.id) || paypalSaw(byCard.body.id)).toBe(false);

    // Funded by the platform balance (no card: the Amex rule's brand condition cannot hold): the
    // balance enquiry is the step before anything moves, so Stripe being down fails over too.
    const byBalance = await splitOf(own.key, { currency: 'GBP', total_amount: 5, platform_fee: 1, splits: [{ destination: 'acct_route_b', amount: 4 }] });
    expect(byBalance.status, byBalance.text).toBe(201);
    expect(byBalance.body).toMatchObject({
      status: 'succeeded', gateway: 'sandbox', funding: 'platform_balance', routing: { rule_id: gbpRule, failed_over: [{ gateway: 'stripe' }] },
    });
    expect(byBalance.body.routing.reason).toContain('funded by the platform balance at sandbox');
    expect(byBalance.body.routing.reason).not.toContain('Amex');

    // No rule for USD: the account's gateway (test mode: the sandbox).
    const plain = await splitOf(own.key, { currency: 'USD', total_amount: 3, platform_fee: 0, payment_method: cardBody('4242424242424242'), splits: [{ destination: 'acct_route_c', amount: 3 }] });
    expect(plain.status, plain.text).toBe(201);
    expect(plain.body).toMatchObject({ gateway: 'sandbox', routing: { rule_id: null, reason: 'test mode: the sandbox (no routing rule matched)', failed_over: [] } });
  });

  it('answers 422 transfers_not_supported, naming why, when no gateway for the split makes transfers (nothing tokenized)', async () => {
    const own = await ownAccount('live');
    await platform.sql(`insert into payment_gateway_settings (account_id, live_gateway, updated_at) values ($1, 'adyen', now())`, [own.accountId]);
    await rule(own.key, { name: 'Live EUR to PayPal', conditions: { currencies: ['EUR'] }, gateways: ['paypal'] });
    // A card no other test uses: an earlier test's payment may still be reconciling with the doubles.
    const card = '4000056655665556';
    const refused = await splitOf(own.key, {
      currency: 'EUR', total_amount: 10, platform_fee: 1, payment_method: cardBody(card), splits: [{ destination: 'acct_live_a', amount: 9 }],
    });
    expect(refused.status, refused.text).toBe(422);
    expect(refused.body.code).toBe('transfers_not_supported');
    expect(refused.body.detail).toContain('rule "Live EUR to PayPal" (paypal: transfers_not_supported)');
    expect(refused.body.detail).toContain('the account\'s live gateway adyen: transfers_not_supported');
    expect([...adyen.requests, ...paypal.requests].filter((r) => JSON.stringify(r.body ?? null).includes(card))).toEqual([]);
    expect((await platform.sql('select 1 from payments where account_id = $1', [own.accountId]))).toHaveLength(0);
  });

  it('saves a billing card where the rules route it (failover before any charge) and charges it there only, whatever later rules prefer', async () => {
    const own = await ownAccount();
    const eurRule = await rule(own.key, { name: 'EUR cards to Adyen', conditions: { currencies: ['EUR'] }, gateways: ['adyen', 'paypal'] });
    const plan = await newPlan(http, own.key, { amount: 2500, currency: 'EUR' });
    const clock = await newClock(http, own.key, '2031-01-01T00:00:00Z');
    const payer = await newCustomer(http, own.key);
    const sub = await http('/v3/subscriptions', { key: own.key, body: { customer_id: payer, plan_id: plan.id, auto_collection: true, payment_method: cardBody('4111111111111111'), test_clock: clock } });
    expect(sub.status, sub.text).toBe(201);
    expect(await platform.sql('select card_gateway from subscriptions where id = $1', [sub.body.id])).toEqual([{ card_gateway: 'adyen' }]);

    await advance(http, own.key, clock, '2031-02-02T00:00:00Z');
    const first = (await invoices(http, own.key, sub.body.id)).find((i) => i.status === 'paid');
    expect(first, 'a paid invoice').toBeDefined();
    const firstPayment = (await http(`/v3/payments/${first.last_payment_id}/status`, { key: own.key })).body;
    expect(firstPayment).toMatchObject({ status: 'succeeded', gateway: 'adyen', routing: { rule_id: eurRule, failed_over: [] } });
    expect(firstPayment.routing.reason).toContain('the saved card\'s gateway: adyen tokenised it');
    expect(adyenSaw(firstPayment.id)).toBe(true);

    // Adyen down when the next card is saved: it fails over to PayPal (nothing was charged yet) and stays there.
    adyen.setDown(true);
    const other = await newCustomer(http, own.key);
    try {
      const second = await http('/v3/subscriptions', { key: own.key, body: { customer_id: other, plan_id: plan.id, trial_period_days: 30, payment_method: cardBody('4111111111111111') } });
      expect(second.status, second.text).toBe(201);
      expect(await platform.sql('select card_gateway from subscriptions where id = $1', [second.body.id])).toEqual([{ card_gateway: 'paypal' }]);
    } finally {
      adyen.setDown(false);
    }
    // That saved card cannot fund a split: PayPal makes no transfers, and the token is valid nowhere else.
    const noTransfers = await splitOf(own.key, { currency: 'EUR', total_amount: 10, platform_fee: 1, customer_id: other, splits: [{ destination: 'acct_saved_pp', amount: 9 }] });
    expect(noTransfers.status, noTransfers.text).toBe(422);
    expect(noTransfers.body).toMatchObject({ code: 'transfers_not_supported', errors: [{ path: 'customer_id' }] });

    // A rule that now prefers PayPal for EUR cannot move the Adyen card's charges: they stay with Adyen.
    await rule(own.key, { name: 'EUR to PayPal now', priority: 10, conditions: { currencies: ['EUR'] }, gateways: ['paypal'] });
    await advance(http, own.key, clock, '2031-03-02T00:00:00Z');
    const paid = (await invoices(http, own.key, sub.body.id)).filter((i) => i.status === 'paid');
    const latest = paid.find((i) => i.id !== first.id);
    expect(latest, 'a second paid invoice').toBeDefined();
    const laterPayment = (await http(`/v3/payments/${latest.last_payment_id}/status`, { key: own.key })).body;
    expect(laterPayment).toMatchObject({ status: 'succeeded', gateway: 'adyen', routing: { rule_id: null, failed_over: [] } });
    expect(laterPayment.routing.reason).toContain('rule "EUR to PayPal now"');
    expect(laterPayment.routing.reason).toContain('prefers paypal, which cannot charge this card');
    expect(paypalSaw(laterPayment.id)).toBe(false);
  });

  it('charges a saved card for a split at its own gateway only: no failover when that gateway is down, the payment waits there', async () => {
    const own = await ownAccount();
    const payer = await newCustomer(http, own.key);
    const plan = await newPlan(http, own.key, { amount: 1500 });
    const sub = await http('/v3/subscriptions', { key: own.key, body: { customer_id: payer, plan_id: plan.id, trial_period_days: 30, payment_method: cardBody('4242424242424242') } });
    expect(sub.status, sub.text).toBe(201);
    expect(await platform.sql('select card_gateway from subscriptions where id = $1', [sub.body.id])).toEqual([{ card_gateway: 'sandbox' }]);
    await rule(own.key, { name: 'USD splits to Stripe', conditions: { currencies: ['USD'] }, gateways: ['stripe'] });

    platform.paymentGateways.sandbox.simulateOutage(true);
    let pending;
    try {
      pending = await splitOf(own.key, { currency: 'USD', total_amount: 12, platform_fee: 2, customer_id: payer, splits: [{ destination: 'acct_saved_wait', amount: 10 }] });
      expect(pending.status, pending.text).toBe(202);
      expect(pending.body).toMatchObject({ status: 'processing', gateway: 'sandbox', funding: 'card', routing: { rule_id: null, failed_over: [] } });
      expect(pending.body.routing.reason).toContain('the saved card\'s gateway: sandbox tokenised it');
      expect(pending.body.routing.reason).toContain('prefers stripe, which cannot charge this card');
    } finally {
      platform.paymentGateways.sandbox.simulateOutage(false);
    }
    const done = await waitForPayment(http, own.key, pending.body.id, (p) => p.status !== 'processing' && p.split?.status !== 'pending');
    expect(done).toMatchObject({ status: 'succeeded', gateway: 'sandbox', split: { status: 'completed' } });
    const charges = await platform.sql('select 1 from sandbox_gateway_charges where idempotency_key = $1', [`${pending.body.id}:charge`]);
    expect(charges).toHaveLength(1);
  });
});
