import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AdyenGateway } from '../../domain/payments/gateways/adyen.ts';
import { PayPalGateway } from '../../domain/payments/gateways/paypal.ts';
import { CardRejectedError, GatewayRejectedError, GatewayUnavailableError, type PaymentGateway } from '../../domain/payments/gateways/types.ts';
import { startAdyenDouble, startPayPalDouble, type Double } from './gateway-doubles.ts';

/**
 * The Adyen and PayPal adapters, through their official SDKs, against local HTTP doubles that
 * answer in the providers' documented shapes (test/payments/gateway-doubles.ts): success, decline,
 * 3-D Secure, 429 and 5xx, idempotent retries, refunds, and no card data after tokenization.
 */
let adyenDouble: Double;
let paypalDouble: Double;
let adyen: AdyenGateway;
let paypal: PayPalGateway;

beforeAll(async () => {
  adyenDouble = await startAdyenDouble({ apiKey: 'AQE-test-key', merchantAccount: 'BusinessPlatformECOM' });
  paypalDouble = await startPayPalDouble({ clientId: 'client-id', clientSecret: 'client-secret' });
  adyen = new AdyenGateway({ apiKey: 'AQE-test-key', merchantAccount: 'BusinessPlatformECOM', environment: 'TEST', checkoutBase: adyenDouble.url, fingerprintKey: 'k' });
  paypal = new PayPalGateway({ clientId: 'client-id', clientSecret: 'client-secret', environment: 'sandbox', apiBase: paypalDouble.url, fingerprintKey: 'k' });
});
afterAll(async () => {
  await adyenDouble?.close();
  await paypalDouble?.close();
});

const card = (number: string) => ({ number, exp_month: 3, exp_year: 2030, cvc: '737' });
let seq = 0;
const charge = (gateway: PaymentGateway, token: string, amount: number, key = `pay_test_${++seq}`) => gateway.charge({
  idempotencyKey: key, merchant: 'acct_test:test', amount, currency: 'EUR', card: { token, fingerprint: 'f' }, customerId: 'cus_1', description: 'Order 42', fraudProtection: true, paymentId: key,
});

describe.each([
  ['adyen', () => adyen, () => adyenDouble],
  ['paypal', () => paypal, () => paypalDouble],
] as const)('%s adapter', (name, gw, dbl) => {
  it('tokenizes once with the card, then charges with the token only; a retried charge is one charge', async () => {
    const saved = await gw().tokenizeCard(card('4111 1111 1111 1111'));
    expect(saved).toMatchObject({ brand: 'visa', last4: '1111', expMonth: 3, expYear: 2030 });
    expect(saved.token).not.toContain('4111111111111111');
    const before = dbl().requests.length;
    const first = await charge(gw(), saved.token, 12_345, `pay_${name}_retry`);
    const again = await charge(gw(), saved.token, 12_345, `pay_${name}_retry`);
    expect(first.outcome).toBe('succeeded');
    expect(again).toEqual(first); // same idempotency key → the provider's first answer
    if (first.outcome === 'succeeded' && name === 'paypal') expect(first.fees).toBe(480); // 3.49% of 123.45 + 0.49
    const sent = dbl().requests.slice(before);
    expect(JSON.stringify(sent.map((r) => r.body))).not.toContain('4111111111111111');
    const keys = sent.map((r) => r.headers[name === 'adyen' ? 'idempotency-key' : 'paypal-request-id']).filter(Boolean);
    expect(keys).toEqual([`pay_${name}_retry`, `pay_${name}_retry`]);
    const amounts = sent.map((r) => (name === 'adyen' ? r.body?.amount : r.body?.purchase_units?.[0]?.amount)).filter(Boolean);
    expect(amounts[0]).toEqual(name === 'adyen' ? { currency: 'EUR', value: 12345 } : { currency_code: 'EUR', value: '123.45' });

    const refund = await gw().refund({ idempotencyKey: `re_${name}_1`, chargeReference: first.reference!, amount: 5000, currency: 'EUR' });
    expect(refund.reference).toMatch(/^[A-Z0-9]+$/);
    await expect(gw().refund({ idempotencyKey: `re_${name}_2`, chargeReference: 'UNKNOWN0REF', amount: 1, currency: 'EUR' })).rejects.toBeInstanceOf(GatewayRejectedError);
  });

  it('maps declines, 3-D Secure, 429 and 5xx', async () => {
    const declined = await charge(gw(), (await gw().tokenizeCard(card('4000000000000002'))).token, 1000);
    expect(declined).toMatchObject({ outcome: 'declined', declineCode: 'generic_decline' });
    const broke = await charge(gw(), (await gw().tokenizeCard(card('4000000000009995'))).token, 1000);
    expect(broke).toMatchObject({ outcome: 'declined', declineCode: name === 'adyen' ? 'insufficient_funds' : 'generic_decline' });
    const threeDs = await charge(gw(), (await gw().tokenizeCard(card('4212345678910006'))).token, 1000);
    expect(threeDs).toMatchObject({ outcome: 'declined', declineCode: 'authentication_required' });
    expect(threeDs.reference).toBeTruthy();

    const good = (await gw().tokenizeCard(card('5555555555554444'))).token;
    await expect(charge(gw(), good, 42_900)).rejects.toBeInstanceOf(GatewayUnavailableError);
    await expect(charge(gw(), good, 50_300)).rejects.toBeInstanceOf(GatewayUnavailableError);
    // A 429 is not remembered: the same key succeeds once the provider accepts requests again.
    const key = `pay_${name}_after_429`;
    await expect(charge(gw(), good, 42_900, key)).rejects.toThrow(/429|RATE_LIMIT|Too many/);
    expect((await charge(gw(), good, 1_000, key)).outcome).toBe('succeeded');
  });

  it('offers no marketplace transfers', async () => {
    expect(await gw().transfer({ idempotencyKey: 'tr_1', merchant: 'acct_test:test', destination: 'acct_1', amount: 1, currency: 'EUR', chargeReference: 'x', group: 'pay_1' }))
      .toMatchObject({ outcome: 'failed', code: 'transfers_not_supported' });
    await expect(gw().balance({ merchant: 'acct_test:test', currency: 'EUR' })).rejects.toMatchObject({ code: 'transfers_not_supported' });
  });
});

describe('credentials', () => {
  it('a wrong Adyen key or PayPal secret is refused, not retried forever', async () => {
    const badAdyen = new AdyenGateway({ apiKey: 'wrong', merchantAccount: 'BusinessPlatformECOM', environment: 'TEST', checkoutBase: adyenDouble.url });
    await expect(badAdyen.tokenizeCard(card('4111111111111111'))).rejects.toBeInstanceOf(GatewayRejectedError);
    const badPayPal = new PayPalGateway({ clientId: 'client-id', clientSecret: 'nope', environment: 'sandbox', apiBase: paypalDouble.url });
    await expect(badPayPal.tokenizeCard(card('4111111111111111'))).rejects.toThrow();
    await expect(badPayPal.tokenizeCard(card('4111111111111111'))).rejects.not.toBeInstanceOf(CardRejectedError);
  });
});
