import { createHmac, randomBytes } from 'node:crypto';
import type { Pool, PoolClient } from 'pg';
import { installationSecret } from '../../../db/installation-settings.ts';
import { cardBrand, fullExpiryYear, last4, normalizeCardNumber, type CardInput, type CardOnFile } from '../cards.ts';
import { divideHalfEven, exponent } from '../../money.ts';
import {
  GatewayRejectedError, GatewayUnavailableError,
  type BalanceRequest, type ChargeRequest, type ChargeResult, type PaymentGateway, type RefundRequest, type ReversalRequest, type TransferRequest,
  type TransferResult,
} from './types.ts';
import { isUniqueViolation } from '../../../db/errors.ts';

/**
 * The sandbox gateway: used by every test-mode key and in development. It behaves like a real
 * external gateway (its own ledger tables, idempotency keys, decisions taken once per key and
 * replayed), and its test cards reuse Stripe's published numbers where Stripe has one.
 */
export type SandboxScenario =
  | 'succeeds' | 'generic_decline' | 'insufficient_funds' | 'lost_card' | 'expired_card' | 'incorrect_cvc'
  | 'always_blocked' | 'highest_risk' | 'elevated_risk' | 'processing_error_once' | 'slow';

export const SANDBOX_TEST_CARDS: { number: string; scenario: SandboxScenario; description: string }[] = [
  { number: '4242424242424242', scenario: 'succeeds', description: 'Visa: succeeds (as does any other valid number not listed here)' },
  { number: '5555555555554444', scenario: 'succeeds', description: 'Mastercard: succeeds' },
  { number: '378282246310005', scenario: 'succeeds', description: 'American Express (4-digit CVC): succeeds' },
  { number: '4000000000000002', scenario: 'generic_decline', description: 'Declined: generic_decline' },
  { number: '4000000000009995', scenario: 'insufficient_funds', description: 'Declined: insufficient_funds' },
  { number: '4000000000009987', scenario: 'lost_card', description: 'Declined: lost_card' },
  { number: '4000000000000069', scenario: 'expired_card', description: 'Declined: expired_card (the card looks valid to our checks; the issuer says it expired)' },
  { number: '4000000000000127', scenario: 'incorrect_cvc', description: 'Declined: incorrect_cvc' },
  { number: '4100000000000019', scenario: 'always_blocked', description: 'Always blocked by the gateway as fraudulent (decline_code fraudulent, risk_score 100), with or without fraud_protection' },
  { number: '4000000000004954', scenario: 'highest_risk', description: 'Highest risk: +90 risk signal, so blocked (highest_risk_level) when fraud_protection is on; succeeds without it' },
  { number: '4000000000009235', scenario: 'elevated_risk', description: 'Elevated risk: +60 risk signal; succeeds with a risk_score around 65-75' },
  { number: '4000000000000119', scenario: 'processing_error_once', description: 'The first attempt fails with a processing error (retryable); the automatic retry succeeds' },
  { number: '4000000000007775', scenario: 'slow', description: 'Succeeds after SANDBOX_GATEWAY_SLOW_CARD_MS (default 10 s): the request answers 202, then the status shows succeeded' },
];

const SCENARIO_BY_NUMBER = new Map(SANDBOX_TEST_CARDS.map((c) => [c.number, c.scenario]));

const DECLINES: Partial<Record<SandboxScenario, { code: string; message: string }>> = {
  generic_decline: { code: 'generic_decline', message: 'Your card was declined.' },
  insufficient_funds: { code: 'insufficient_funds', message: 'Your card has insufficient funds.' },
  lost_card: { code: 'lost_card', message: 'Your card was declined.' },
  expired_card: { code: 'expired_card', message: 'Your card has expired.' },
  incorrect_cvc: { code: 'incorrect_cvc', message: 'Your card\'s security code is incorrect.' },
  always_blocked: { code: 'fraudulent', message: 'Your card was declined.' },
};

/** A destination whose id ends in `closed` (e.g. `acct_sandbox_closed`) refuses transfers. */
export const SANDBOX_CLOSED_DESTINATION = /closed$/;

/**
 * Every sandbox merchant (account and mode) starts with this balance in every currency, in major
 * units: 100,000.00 USD is 10,000,000 minor units (100,000 JPY; 100,000.000 KWD). Its balance is
 * that, plus its succeeded charges, minus what was refunded of them, minus its paid transfers that
 * were not reversed (fees are not deducted).
 */
export const SANDBOX_STARTING_BALANCE_MAJOR = 100_000;

export function sandboxStartingBalance(currency: string): number {
  return SANDBOX_STARTING_BALANCE_MAJOR * 10 ** exponent(currency);
}

export interface SandboxOptions {
  /** Percentage fee as a decimal string ("2.9") plus a fixed fee in minor units. */
  feePercent: string;
  feeFixed: number;
  slowCardMs: number;
  riskBlockThreshold: number;
  /**
   * The HMAC key of card fingerprints (CARD_FINGERPRINT_KEY); null: the installation's own key,
   * generated once and kept in the database (`installation_settings`, name `card_fingerprint_key`).
   */
  fingerprintKey: string | null;
}

export const SANDBOX_DEFAULTS: SandboxOptions = { feePercent: '2.9', feeFixed: 30, slowCardMs: 10_000, riskBlockThreshold: 75, fingerprintKey: null };

/** The `installation_settings` row holding the generated fingerprint key. */
export const FINGERPRINT_KEY_SETTING = 'card_fingerprint_key';

type ChargeRow = {
  id: string;
  status: 'succeeded' | 'declined' | 'processing_error';
  decline_code: string | null;
  risk_score: number | null;
  fee: string;
  attempts: number;
  completes_at: Date;
  created_at: Date;
};

export class SandboxGateway implements PaymentGateway {
  readonly name = 'sandbox' as const;
  readonly options: SandboxOptions;
  private readonly getPool: () => Promise<Pool>;
  private outage = false;
  private fingerprintKey: Promise<string> | undefined;

  constructor(pool: () => Promise<Pool>, options: Partial<SandboxOptions> = {}) {
    this.getPool = pool;
    this.options = { ...SANDBOX_DEFAULTS, ...options };
  }

  /**
   * Test hook: while on, every money-moving call (charge, refund, transfer, reversal) fails as if
   * the gateway were down, so accepted payments stay `processing` and their workflows retry.
   * Tokenization keeps working (it models the gateway's separate vault endpoint).
   */
  simulateOutage(on: boolean): void {
    this.outage = on;
  }

  private assertUp(): void {
    if (this.outage) throw new GatewayUnavailableError('The sandbox gateway is unavailable (simulated outage).');
  }

  /**
   * Card fingerprints are an HMAC of the number, so they can be compared without keeping the
   * number; the key must stay secret (a known key turns a fingerprint back into the number by
   * trying the few card numbers a BIN and last4 leave), so it never comes from the source.
   */
  async cardFingerprint(number: string): Promise<string> {
    const key = await (this.fingerprintKey ??= this.options.fingerprintKey !== null
      ? Promise.resolve(this.options.fingerprintKey)
      : this.getPool().then((pool) => installationSecret(pool, FINGERPRINT_KEY_SETTING)).catch((err: unknown) => {
        this.fingerprintKey = undefined; // not cached: the next card tries again
        throw err;
      }));
    return createHmac('sha256', key).update(normalizeCardNumber(number)).digest('base64url').slice(0, 16);
  }

  private async query<T extends Record<string, unknown>>(text: string, values: unknown[]): Promise<T[]> {
    return (await (await this.getPool()).query<T>(text, values)).rows;
  }

  async tokenizeCard(card: CardInput): Promise<CardOnFile> {
    const number = normalizeCardNumber(card.number);
    const scenario = SCENARIO_BY_NUMBER.get(number) ?? 'succeeds';
    const token = `tok_sandbox_${randomBytes(12).toString('hex')}`;
    const view: CardOnFile = {
      token,
      brand: cardBrand(number),
      last4: last4(number),
      expMonth: card.exp_month,
      expYear: fullExpiryYear(card.exp_year),
      fingerprint: await this.cardFingerprint(number),
    };
    await this.query(
      `insert into sandbox_gateway_tokens (token, brand, last4, exp_month, exp_year, scenario, fingerprint) values ($1, $2, $3, $4, $5, $6, $7)`,
      [token, view.brand, view.last4, view.expMonth, view.expYear, scenario, view.fingerprint],
    );
    return view;
  }

  async charge(req: ChargeRequest): Promise<ChargeResult> {
    this.assertUp();
    // Nothing is read for the key first: a retry's insert below finds the charge recorded and
    // answers it (`on conflict … do nothing`, then `replay`), as a first attempt's read would have.
    const [token] = await this.query<{ scenario: SandboxScenario; fingerprint: string }>(
      'select scenario, fingerprint from sandbox_gateway_tokens where token = $1', [req.card.token]);
    if (!token) throw new GatewayRejectedError('token_invalid', 'The sandbox gateway has no such card token.');

    const riskScore = req.fraudProtection || token.scenario === 'always_blocked' ? await this.riskScore(req, token.scenario, token.fingerprint) : null;
    let status: ChargeRow['status'] = 'succeeded';
    let declineCode: string | null = null;
    const decline = DECLINES[token.scenario];
    if (decline) {
      status = 'declined';
      declineCode = decline.code;
    } else if (req.fraudProtection && riskScore !== null && riskScore >= this.options.riskBlockThreshold) {
      status = 'declined';
      declineCode = 'highest_risk_level';
    } else if (token.scenario === 'processing_error_once') {
      status = 'processing_error';
    }
    const delayMs = token.scenario === 'slow' ? this.options.slowCardMs : 0;
    const [inserted] = await this.query<ChargeRow>(
      `insert into sandbox_gateway_charges
         (id, idempotency_key, token, fingerprint, amount, currency, status, decline_code, risk_score, fee, completes_at, merchant)
       values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, now() + make_interval(secs => $11::double precision / 1000), $12)
       on conflict (idempotency_key) do nothing
       returning *`,
      [`ch_sandbox_${randomBytes(10).toString('hex')}`, req.idempotencyKey, req.card.token, token.fingerprint, req.amount, req.currency,
        status, declineCode, riskScore, this.fee(req.amount, req.currency), delayMs, req.merchant],
    );
    if (!inserted) return this.replay((await this.findCharge(req.idempotencyKey))!);
    if (inserted.status === 'processing_error') {
      throw new GatewayUnavailableError('The sandbox gateway had a processing error; retry with the same idempotency key.');
    }
    return this.replay(inserted);
  }

  private async findCharge(key: string): Promise<ChargeRow | undefined> {
    return (await this.query<ChargeRow>('select * from sandbox_gateway_charges where idempotency_key = $1', [key]))[0];
  }

  /**
   * The answer for a key whose decision is already recorded: what a real gateway does on an
   * idempotent retry. A charge still "in flight" (the slow card) is waited for, so a second worker
   * picking up a retried activity sees the first charge complete instead of making another.
   */
  private async replay(row: ChargeRow): Promise<ChargeResult> {
    if (row.status === 'processing_error') {
      row = (await this.query<ChargeRow>(
        `update sandbox_gateway_charges set status = 'succeeded', attempts = attempts + 1 where id = $1 returning *`, [row.id]))[0]!;
    }
    const wait = new Date(row.completes_at).getTime() - Date.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    const r = row;
    if (r.status === 'declined') {
      const message = Object.values(DECLINES).find((d) => d.code === r.decline_code)?.message ?? 'The payment was blocked by fraud protection.';
      return { outcome: 'declined', reference: r.id, declineCode: r.decline_code ?? 'generic_decline', message, riskScore: r.risk_score };
    }
    return {
      outcome: 'succeeded', reference: r.id, fees: Number(r.fee), riskScore: r.risk_score,
      settlementDate: addBusinessDays(new Date(r.created_at), 2),
    };
  }

  /**
   * Risk score 0-100 from documented signals: 5 base; +60 / +90 for the elevated / highest risk
   * test cards; +20 from 1,000 and +40 from 10,000 major units; +10 without a customer_id; +30 when
   * the same card was charged 3 or more times in the last 10 minutes. The always-blocked card is 100.
   */
  private async riskScore(req: ChargeRequest, scenario: SandboxScenario, fingerprint: string): Promise<number> {
    if (scenario === 'always_blocked') return 100;
    let score = 5;
    if (scenario === 'highest_risk') score += 90;
    if (scenario === 'elevated_risk') score += 60;
    const major = req.amount / 10 ** exponent(req.currency);
    if (major >= 10_000) score += 40;
    else if (major >= 1_000) score += 20;
    if (!req.customerId) score += 10;
    const [recent] = await this.query<{ n: string }>(
      `select count(*) as n from sandbox_gateway_charges where fingerprint = $1 and created_at > now() - interval '10 minutes'`, [fingerprint]);
    if (Number(recent?.n ?? 0) >= 3) score += 30;
    return Math.min(score, 100);
  }

  /** percent of the amount, rounded half-even to the minor unit, plus the fixed fee. */
  fee(amount: number, _currency: string): number {
    const [whole, frac = ''] = this.options.feePercent.split('.');
    const digits = BigInt(`${whole}${frac}`);
    const divisor = 100n * 10n ** BigInt(frac.length);
    return Number(divideHalfEven(BigInt(amount) * digits, divisor)) + this.options.feeFixed;
  }

  async refund(req: RefundRequest): Promise<{ reference: string }> {
    this.assertUp();
    const client = await (await this.getPool()).connect();
    try {
      const prior = await client.query<{ id: string }>('select id from sandbox_gateway_refunds where idempotency_key = $1', [req.idempotencyKey]);
      if (prior.rows[0]) return { reference: prior.rows[0].id };
      await client.query('begin');
      const charged = await client.query(
        `update sandbox_gateway_charges set amount_refunded = amount_refunded + $2
          where id = $1 and status = 'succeeded' and amount_refunded + $2 <= amount returning id`, [req.chargeReference, req.amount]);
      if (!charged.rowCount) {
        await client.query('rollback');
        throw new GatewayRejectedError('refund_exceeds_charge', 'The sandbox gateway refused the refund: the charge does not exist, did not succeed, or has less than this amount left to refund.');
      }
      const id = `re_sandbox_${randomBytes(10).toString('hex')}`;
      await client.query('insert into sandbox_gateway_refunds (id, idempotency_key, charge_id, amount) values ($1, $2, $3, $4)',
        [id, req.idempotencyKey, req.chargeReference, req.amount]);
      await client.query('commit');
      return { reference: id };
    } catch (err) {
      await client.query('rollback').catch(() => undefined);
      if (isUniqueViolation(err)) return this.refund(req); // same key, concurrently: replay
      throw err;
    } finally {
      client.release();
    }
  }

  async transfer(req: TransferRequest): Promise<TransferResult> {
    this.assertUp();
    if (req.chargeReference === null) return this.transferFromBalance(req);
    const closed = SANDBOX_CLOSED_DESTINATION.test(req.destination);
    await this.query(
      `insert into sandbox_gateway_transfers (id, idempotency_key, destination, amount, currency, source_charge, status, failure_code, merchant)
       values ($1, $2, $3, $4, $5, $6, $7, $8, $9) on conflict (idempotency_key) do nothing`,
      [`tr_sandbox_${randomBytes(10).toString('hex')}`, req.idempotencyKey, req.destination, req.amount, req.currency, req.chargeReference,
        closed ? 'failed' : 'paid', closed ? 'account_closed' : null, req.merchant],
    );
    const [row] = await this.query<{ id: string; status: string; failure_code: string | null }>(
      'select id, status, failure_code from sandbox_gateway_transfers where idempotency_key = $1', [req.idempotencyKey]);
    return this.transferAnswer(req, row!, null);
  }

  private transferAnswer(req: TransferRequest, row: { id: string; status: string; failure_code: string | null }, available: number | null): TransferResult {
    if (row.status !== 'failed') return { outcome: 'paid', reference: row.id };
    if (row.failure_code === 'balance_insufficient') {
      return {
        outcome: 'failed', code: 'balance_insufficient', ...(available !== null ? { available } : {}),
        message: `The platform balance has ${available ?? 'less than'} ${req.currency} minor units available, less than the transfer of ${req.amount}.`,
      };
    }
    return { outcome: 'failed', code: row.failure_code ?? 'transfer_failed', message: `The destination ${req.destination} cannot receive transfers (account closed).` };
  }

  /**
   * A transfer paid out of the merchant's balance (no source charge): decided once per idempotency
   * key, under a transaction-scoped advisory lock per merchant and currency, so two transfers can
   * never both spend the same balance: the check and the insert are one transaction, serialized.
   */
  private async transferFromBalance(req: TransferRequest): Promise<TransferResult> {
    const client = await (await this.getPool()).connect();
    try {
      await client.query('begin');
      await client.query(`select pg_advisory_xact_lock(hashtextextended('sandbox-balance|' || $1 || '|' || $2, 0))`, [req.merchant, req.currency]);
      const prior = await client.query<{ id: string; status: string; failure_code: string | null }>(
        'select id, status, failure_code from sandbox_gateway_transfers where idempotency_key = $1', [req.idempotencyKey]);
      let row = prior.rows[0];
      let available: number | null = null;
      if (!row) {
        available = await this.availableBalance(client, req);
        const closed = SANDBOX_CLOSED_DESTINATION.test(req.destination);
        const failure = closed ? 'account_closed' : available < req.amount ? 'balance_insufficient' : null;
        row = (await client.query<{ id: string; status: string; failure_code: string | null }>(
          `insert into sandbox_gateway_transfers (id, idempotency_key, destination, amount, currency, source_charge, status, failure_code, merchant)
           values ($1, $2, $3, $4, $5, null, $6, $7, $8) returning id, status, failure_code`,
          [`tr_sandbox_${randomBytes(10).toString('hex')}`, req.idempotencyKey, req.destination, req.amount, req.currency,
            failure ? 'failed' : 'paid', failure, req.merchant])).rows[0]!;
      } else if (row.failure_code === 'balance_insufficient') {
        available = await this.availableBalance(client, req);
      }
      await client.query('commit');
      return this.transferAnswer(req, row, available);
    } catch (err) {
      await client.query('rollback').catch(() => undefined);
      throw err;
    } finally {
      client.release();
    }
  }

  async balance(req: BalanceRequest): Promise<{ available: number }> {
    this.assertUp();
    const client = await (await this.getPool()).connect();
    try {
      return { available: await this.availableBalance(client, req) };
    } finally {
      client.release();
    }
  }

  /** The starting balance, plus succeeded charges less their refunds, less paid transfers not reversed. */
  private async availableBalance(client: PoolClient, req: BalanceRequest): Promise<number> {
    const { rows } = await client.query<{ available: string }>(
      `select $3::bigint
          + coalesce((select sum(amount - amount_refunded) from sandbox_gateway_charges
                       where merchant = $1 and currency = $2 and status = 'succeeded'), 0)
          - coalesce((select sum(amount) from sandbox_gateway_transfers
                       where merchant = $1 and currency = $2 and status = 'paid' and reversed_at is null), 0) as available`,
      [req.merchant, req.currency, sandboxStartingBalance(req.currency)]);
    return Number(rows[0]!.available);
  }

  async reverseTransfer(req: ReversalRequest): Promise<{ reference: string }> {
    this.assertUp();
    const [row] = await this.query<{ reversal_id: string }>(
      `update sandbox_gateway_transfers set reversal_id = coalesce(reversal_id, $2), reversed_at = coalesce(reversed_at, now())
        where id = $1 and status = 'paid' returning reversal_id`,
      [req.transferReference, `trr_sandbox_${randomBytes(10).toString('hex')}`]);
    if (!row) throw new GatewayRejectedError('transfer_not_found', 'The sandbox gateway has no paid transfer with this reference.');
    return { reference: row.reversal_id };
  }
}

/** `days` business days (Monday to Friday; public holidays are not modelled) after `from`, as YYYY-MM-DD. */
export function addBusinessDays(from: Date, days: number): string {
  const d = new Date(Date.UTC(from.getUTCFullYear(), from.getUTCMonth(), from.getUTCDate()));
  let left = days;
  while (left > 0) {
    d.setUTCDate(d.getUTCDate() + 1);
    const dow = d.getUTCDay();
    if (dow !== 0 && dow !== 6) left--;
  }
  return d.toISOString().slice(0, 10);
}
