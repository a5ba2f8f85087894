import type { EntityManager } from '@mikro-orm/postgresql';
import { convertMinorUnits, divideHalfEven, exponent } from '../money.ts';
import type { Scope } from '../scope.ts';
import { isoUtc } from './sql.ts';

/**
 * Prices in other currencies. A product has a base price in its own currency and may carry fixed
 * prices per currency; any other currency is converted from the account's stored exchange rates,
 * exactly (bigint arithmetic on the decimal rate) and rounded half-even to the target currency's
 * exponent (JPY 0 decimals, KWD 3, most 2).
 */

export interface ExchangeRateView {
  object: 'exchange_rate';
  base: string;
  quote: string;
  /** Units of `quote` per one unit of `base`, as a decimal string (exact). */
  rate: string;
  updated_at: string;
}

export interface PriceView {
  currency: string;
  /** Minor units of `currency`; null when no fixed price or exchange rate can price it. */
  amount: number | null;
  /** base: the product's own price; fixed: set per currency on the product; converted: from a rate. */
  source: 'base' | 'fixed' | 'converted' | 'unavailable';
  /** The rate used (units of `currency` per unit of the base currency), for `converted`. */
  exchange_rate: string | null;
}

export type RateTable = Map<string, string>;

const key = (base: string, quote: string) => `${base}>${quote}`;

function trimRate(text: string): string {
  return text.includes('.') ? text.replace(/0+$/, '').replace(/\.$/, '') : text;
}

export async function loadRates(em: EntityManager, scope: Scope): Promise<RateTable> {
  const rows = await em.execute<{ base_currency: string; quote_currency: string; rate: string }[]>(
    'select base_currency, quote_currency, rate::text as rate from exchange_rates where account_id = ? and livemode = ?',
    [scope.accountId, scope.livemode],
  );
  return new Map(rows.map((r) => [key(r.base_currency, r.quote_currency), trimRate(r.rate)]));
}

export async function listRates(em: EntityManager, scope: Scope): Promise<ExchangeRateView[]> {
  const rows = await em.execute<{ base_currency: string; quote_currency: string; rate: string; updated_at: string }[]>(
    `select base_currency, quote_currency, rate::text as rate, ${isoUtc('updated_at')} as updated_at from exchange_rates
      where account_id = ? and livemode = ? order by base_currency, quote_currency`,
    [scope.accountId, scope.livemode],
  );
  return rows.map((r) => ({ object: 'exchange_rate', base: r.base_currency, quote: r.quote_currency, rate: trimRate(r.rate), updated_at: r.updated_at }));
}

/** Sets rates from one base currency (upsert); returns every stored rate. */
export async function setRates(em: EntityManager, scope: Scope, base: string, rates: Record<string, string>): Promise<ExchangeRateView[]> {
  const entries = Object.entries(rates);
  if (entries.length) {
    await em.execute(
      `insert into exchange_rates (account_id, livemode, base_currency, quote_currency, rate, updated_at)
       select ?, ?, ?, q, r::numeric, now() from jsonb_to_recordset(?::jsonb) as t(q text, r text)
       on conflict (account_id, livemode, base_currency, quote_currency) do update set rate = excluded.rate, updated_at = excluded.updated_at`,
      [scope.accountId, scope.livemode, base, JSON.stringify(entries.map(([q, r]) => ({ q, r })))],
    );
  }
  return listRates(em, scope);
}

/** Converts with the inverse of a stored rate (quote→base stored, base→quote wanted), exactly. */
function convertInverse(minor: number, from: string, to: string, inverseRate: string): number {
  const [whole, fraction = ''] = inverseRate.split('.');
  const rateDigits = BigInt(`${whole}${fraction}`);
  // minor / 10^e(from) / (rateDigits / 10^f) * 10^e(to)
  const shift = fraction.length + exponent(to) - exponent(from);
  const numerator = BigInt(minor) * 10n ** BigInt(Math.max(shift, 0));
  const denominator = rateDigits * 10n ** BigInt(Math.max(-shift, 0));
  return Number(divideHalfEven(numerator, denominator));
}

/** One price in `target`: the base price, a fixed price, a direct rate, or the inverse of a stored rate. */
export function priceIn(
  base: { amount: number; currency: string; fixed?: Record<string, number> },
  target: string,
  rates: RateTable,
): PriceView {
  if (target === base.currency) return { currency: target, amount: base.amount, source: 'base', exchange_rate: null };
  const fixed = base.fixed?.[target];
  if (fixed !== undefined) return { currency: target, amount: fixed, source: 'fixed', exchange_rate: null };
  const direct = rates.get(key(base.currency, target));
  if (direct) {
    return { currency: target, amount: convertMinorUnits(base.amount, base.currency, target, direct), source: 'converted', exchange_rate: direct };
  }
  const inverse = rates.get(key(target, base.currency));
  if (inverse) {
    return {
      currency: target,
      amount: convertInverse(base.amount, base.currency, target, inverse),
      source: 'converted',
      exchange_rate: `1/${inverse}`,
    };
  }
  return { currency: target, amount: null, source: 'unavailable', exchange_rate: null };
}
