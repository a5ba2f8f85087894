import type { FieldError } from '../../platform/errors.ts';

/**
 * Card checks that run before anything is sent to a gateway. Nothing here echoes the number or
 * the CVC back: messages describe what is wrong, never the value.
 */
export const CARD_BRANDS = ['visa', 'mastercard', 'amex', 'discover', 'diners', 'jcb', 'unionpay', 'unknown'] as const;
export type CardBrand = (typeof CARD_BRANDS)[number];

export interface CardInput {
  number: string;
  exp_month: number;
  exp_year: number;
  cvc: string;
}

/** What may be kept about a card: never the full number, never the CVC. */
export interface CardOnFile {
  /** The gateway's token (sandbox `tok_…`, Stripe `pm_…`). */
  token: string;
  brand: CardBrand;
  last4: string;
  expMonth: number;
  expYear: number;
  /** A gateway fingerprint of the card (same card → same fingerprint), for risk signals. */
  fingerprint: string;
}

/** Digits only: spaces and dashes (as people type numbers) are dropped. */
export function normalizeCardNumber(number: string): string {
  return number.replace(/[\s-]/g, '');
}

const BRAND_RULES: { brand: CardBrand; test: (n: string) => boolean; lengths: number[] }[] = [
  { brand: 'amex', test: (n) => /^3[47]/.test(n), lengths: [15] },
  { brand: 'diners', test: (n) => /^3(0[0-5]|[689])/.test(n), lengths: [14, 15, 16, 17, 18, 19] },
  { brand: 'jcb', test: (n) => /^35(2[89]|[3-8])/.test(n), lengths: [16, 17, 18, 19] },
  { brand: 'visa', test: (n) => /^4/.test(n), lengths: [13, 16, 19] },
  { brand: 'mastercard', test: (n) => /^(5[1-5]|2(2[2-9][1-9]|2[3-9]|[3-6]|7[01]|720))/.test(n), lengths: [16] },
  { brand: 'discover', test: (n) => /^(6011|65|64[4-9])/.test(n), lengths: [16, 17, 18, 19] },
  { brand: 'unionpay', test: (n) => /^62/.test(n), lengths: [16, 17, 18, 19] },
];

export function cardBrand(number: string): CardBrand {
  const n = normalizeCardNumber(number);
  return BRAND_RULES.find((r) => r.test(n))?.brand ?? 'unknown';
}

export function luhnValid(number: string): boolean {
  const n = normalizeCardNumber(number);
  if (!/^\d+$/.test(n)) return false;
  let sum = 0;
  for (let i = 0; i < n.length; i++) {
    let d = n.charCodeAt(n.length - 1 - i) - 48;
    if (i % 2 === 1) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
  }
  return sum % 10 === 0;
}

/** CVC length by brand: four digits on American Express cards, three on the others. */
export function cvcLength(brand: CardBrand): number {
  return brand === 'amex' ? 4 : 3;
}

/** Two-digit years mean 20xx, as card faces print them. */
export function fullExpiryYear(year: number): number {
  return year < 100 ? 2000 + year : year;
}

/**
 * Every problem with a card, each naming its field (`<prefix>.number`, …), so a client fixes them
 * all at once. `now` is the clock the expiry is checked against (a card is valid through the last
 * day of its expiry month, UTC).
 */
export function checkCard(card: CardInput, now: Date, prefix = 'payment_method.card'): FieldError[] {
  const errors: FieldError[] = [];
  const number = normalizeCardNumber(card.number);
  const brand = cardBrand(number);
  if (!/^\d+$/.test(number)) {
    errors.push({ path: `${prefix}.number`, message: 'a card number has digits only (spaces and dashes are ignored)' });
  } else {
    const rule = BRAND_RULES.find((r) => r.brand === brand);
    const lengths = rule?.lengths ?? [12, 13, 14, 15, 16, 17, 18, 19];
    if (!lengths.includes(number.length)) {
      errors.push({ path: `${prefix}.number`, message: `a ${brand === 'unknown' ? 'card' : brand} number has ${lengths.join(', ')} digits; this one has ${number.length}` });
    } else if (!luhnValid(number)) {
      errors.push({ path: `${prefix}.number`, message: 'the card number is not valid (its check digit does not match); check for a typing error' });
    }
  }

  const month = card.exp_month;
  const year = fullExpiryYear(card.exp_year);
  if (!Number.isInteger(month) || month < 1 || month > 12) {
    errors.push({ path: `${prefix}.exp_month`, message: 'expected a month from 1 to 12' });
  }
  const thisYear = now.getUTCFullYear();
  if (!Number.isInteger(card.exp_year) || year < 2000 || year > thisYear + 50) {
    errors.push({ path: `${prefix}.exp_year`, message: `expected a four-digit year between ${thisYear} and ${thisYear + 50}` });
  } else if (Number.isInteger(month) && month >= 1 && month <= 12) {
    const thisMonth = now.getUTCMonth() + 1;
    if (year < thisYear || (year === thisYear && month < thisMonth)) {
      errors.push({ path: `${prefix}.exp_year`, message: `the card expired at the end of ${String(month).padStart(2, '0')}/${year}; use a card that has not expired` });
    }
  }

  const expected = cvcLength(brand);
  if (!/^\d+$/.test(card.cvc) || card.cvc.length !== expected) {
    errors.push({ path: `${prefix}.cvc`, message: `a ${brand === 'unknown' ? 'card' : brand} CVC is ${expected} digits` });
  }
  return errors;
}

export function last4(number: string): string {
  return normalizeCardNumber(number).slice(-4);
}
