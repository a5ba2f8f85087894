import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { cardBrand, checkCard, luhnValid } from '../../domain/payments/cards.ts';
import { addBusinessDays, SandboxGateway } from '../../domain/payments/gateways/sandbox.ts';
import { planSplit } from '../../domain/payments/split.ts';
import { paymentsArea } from '../../domain/payments/area.ts';
import { loadConfig } from '../../platform/config.ts';
import type { Logger } from '../../platform/logger.ts';
import type { MikroORM } from '../../db/orm.ts';

const now = new Date('2026-05-15T12:00:00Z');

describe('card checks', () => {
  it('knows brands and the Luhn check digit', () => {
    expect(cardBrand('4242424242424242')).toBe('visa');
    expect(cardBrand('5555555555554444')).toBe('mastercard');
    expect(cardBrand('2223003122003222')).toBe('mastercard');
    expect(cardBrand('378282246310005')).toBe('amex');
    expect(cardBrand('6011111111111117')).toBe('discover');
    expect(luhnValid('4242 4242 4242 4242')).toBe(true);
    expect(luhnValid('4242424242424241')).toBe(false);
  });

  it('names every bad field, and never echoes the number', () => {
    const errors = checkCard({ number: '4242424242424241', exp_month: 13, exp_year: 2026, cvc: '1234' }, now);
    expect(errors.map((e) => e.path)).toEqual(['payment_method.card.number', 'payment_method.card.exp_month', 'payment_method.card.cvc']);
    expect(JSON.stringify(errors)).not.toContain('4242424242424241');
  });

  it('treats a card as valid through the end of its expiry month', () => {
    expect(checkCard({ number: '4242424242424242', exp_month: 5, exp_year: 2026, cvc: '123' }, now)).toEqual([]);
    expect(checkCard({ number: '4242424242424242', exp_month: 4, exp_year: 26, cvc: '123' }, now).map((e) => e.path)).toEqual(['payment_method.card.exp_year']);
    expect(checkCard({ number: '378282246310005', exp_month: 4, exp_year: 2030, cvc: '123' }, now).map((e) => e.message)).toEqual(['a amex CVC is 4 digits']);
  });
});

describe('live mode on the sandbox (PAYMENTS_LIVE_SANDBOX)', () => {
  function build(env: Record<string, string>) {
    const warnings: { msg: string; fields?: Record<string, unknown> }[] = [];
    const logger = { warn: (msg: string, fields?: Record<string, unknown>) => warnings.push({ msg, fields }) } as unknown as Logger;
    const services = paymentsArea.services!({ config: loadConfig(env), orm: {} as MikroORM, logger });
    return { gateways: services.paymentGateways!, warnings };
  }

  it('is off by default: no live gateway without Stripe, and nothing to warn about', () => {
    const { gateways, warnings } = build({});
    expect(gateways).toMatchObject({ liveDefault: null, liveSandboxAllowed: false });
    expect(warnings).toEqual([]);
  });

  it('when set, makes the sandbox the live default and warns loudly at start', () => {
    const { gateways, warnings } = build({ PAYMENTS_LIVE_SANDBOX: 'true' });
    expect(gateways).toMatchObject({ liveDefault: 'sandbox', liveSandboxAllowed: true });
    expect(warnings).toEqual([{ msg: expect.stringContaining('LIVE-MODE PAYMENTS MAY GO THROUGH THE SANDBOX'), fields: expect.objectContaining({ setting: 'PAYMENTS_LIVE_SANDBOX' }) }]);
  });
});

describe('sandbox rules', () => {
  it('fingerprints cards with the configured CARD_FINGERPRINT_KEY (no database needed), never a key from the source', async () => {
    const noPool = async (): Promise<never> => { throw new Error('no database needed'); };
    const key = 'k'.repeat(32);
    const a = new SandboxGateway(noPool, { fingerprintKey: key });
    const fingerprint = await a.cardFingerprint('4242 4242 4242 4242');
    expect(fingerprint).toBe(createHmac('sha256', key).update('4242424242424242').digest('base64url').slice(0, 16));
    expect(await new SandboxGateway(noPool, { fingerprintKey: 'another-key-'.repeat(3) }).cardFingerprint('4242424242424242')).not.toBe(fingerprint);
    expect(await createHmac('sha256', 'business-platform-sandbox-gateway').update('4242424242424242').digest('base64url').slice(0, 16)).not.toBe(fingerprint);
    // Without a configured key the installation's key is read from the database.
    await expect(new SandboxGateway(noPool).cardFingerprint('4242424242424242')).rejects.toThrow('no database needed');
  });

  it('charges 2.9 % + 30 minor units, rounded half-even', () => {
    const gateway = new SandboxGateway(async () => { throw new Error('no database needed'); });
    expect(gateway.fee(1000, 'USD')).toBe(59);
    expect(gateway.fee(50, 'USD')).toBe(31); // 1.45 → 1
    expect(gateway.fee(150, 'USD')).toBe(34); // 4.35 → 4
    expect(new SandboxGateway(async () => { throw new Error(); }, { feePercent: '2.5', feeFixed: 0 }).fee(100, 'USD')).toBe(2); // 2.5 → 2 (even)
  });

  it('settles two business days later, skipping weekends', () => {
    expect(addBusinessDays(new Date('2026-05-14T23:00:00Z'), 2)).toBe('2026-05-18'); // Thursday → Monday
    expect(addBusinessDays(new Date('2026-05-16T10:00:00Z'), 2)).toBe('2026-05-19'); // Saturday → Tuesday
  });
});

describe('marketplace split arithmetic', () => {
  it('accepts parts that add up exactly and converts them to minor units', () => {
    const r = planSplit({ total_amount: 100.1, platform_fee: 10.1, currency: 'USD', splits: [{ destination: 'acct_a', amount: 60 }, { destination: 'acct_b', percent: 29.97002997 / 1 }] });
    expect('errors' in r).toBe(true); // 29.97002997 % has more than 6 decimals
    const ok = planSplit({ total_amount: 100.1, platform_fee: 10.1, currency: 'USD', splits: [{ destination: 'acct_a', amount: 0.1 }, { destination: 'acct_b', amount: 89.9 }] });
    expect(ok).toEqual({ plan: { total: 10010, requestedFee: 1010, platformFee: 1010, roundingRemainder: 0, transfers: [{ destination: 'acct_a', amount: 10 }, { destination: 'acct_b', amount: 8990 }] } });
  });

  it('rounds percentage parts down and gives the remainder to the platform', () => {
    const r = planSplit({ total_amount: 0.05, platform_fee: 0, currency: 'USD', splits: [{ destination: 'acct_a', percent: 50 }, { destination: 'acct_b', percent: 50 }] });
    expect(r).toEqual({ plan: { total: 5, requestedFee: 0, platformFee: 1, roundingRemainder: 1, transfers: [{ destination: 'acct_a', amount: 2 }, { destination: 'acct_b', amount: 2 }] } });
    const thirds = planSplit({ total_amount: 100, platform_fee: 0.01, currency: 'EUR', splits: [{ destination: 'acct_a', percent: 33.3333 }, { destination: 'acct_b', percent: 33.3333 }, { destination: 'acct_c', percent: 33.3234 }] });
    expect(thirds).toMatchObject({ plan: { total: 10000, platformFee: 2, roundingRemainder: 1, transfers: [{ amount: 3333 }, { amount: 3333 }, { amount: 3332 }] } });
  });

  it('rejects parts that do not add up, naming the sums', () => {
    const r = planSplit({ total_amount: 100, platform_fee: 5, currency: 'USD', splits: [{ destination: 'acct_a', amount: 50 }, { destination: 'acct_b', percent: 40 }] });
    expect(r).toEqual({ errors: [{ path: 'splits', message: 'the splits plus platform_fee come to 95.00 USD, but total_amount is 100.00 USD; they must add up exactly' }] });
  });

  it('uses the currency\'s exponent: no decimals for JPY, three for KWD', () => {
    expect(planSplit({ total_amount: 1000.5, platform_fee: 0.5, currency: 'JPY', splits: [{ destination: 'acct_a', amount: 1000 }] }))
      .toMatchObject({ errors: [{ path: 'total_amount' }, { path: 'platform_fee' }] });
    expect(planSplit({ total_amount: 1.005, platform_fee: 0.005, currency: 'KWD', splits: [{ destination: 'acct_a', amount: 1 }] }))
      .toMatchObject({ plan: { total: 1005, platformFee: 5, transfers: [{ amount: 1000 }] } });
    expect(planSplit({ total_amount: 10, platform_fee: 0, currency: 'USD', splits: [{ destination: 'acct_a', amount: 5, percent: 50 }, { destination: 'acct_b' }] }))
      .toMatchObject({ errors: [{ path: 'splits.0' }, { path: 'splits.1' }] });
  });
});
