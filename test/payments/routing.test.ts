import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client } from '../support/http.ts';
import { startTestPlatform, type TestPlatform } from '../support/platform.ts';
import { startAdyenDouble, startPayPalDouble, type Double } from './gateway-doubles.ts';
import { cardBody } from './support.ts';

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
