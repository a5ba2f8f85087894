/**
 * Call pricing: billed per started minute (a 61-second call is two minutes) at a per-minute rate by
 * the destination's country, in USD minor units. An account may set its own rate for a country
 * (comm_call_rates); otherwise the defaults below apply.
 */
export const CALL_CURRENCY = 'USD';

export const DEFAULT_RATES: Readonly<Record<string, number>> = {
  US: 2, CA: 2, PR: 3,
  GB: 4, IE: 4, DE: 4, FR: 4, NL: 4, ES: 4, IT: 4, BE: 4, AT: 4, CH: 6, SE: 4, NO: 5, DK: 4, FI: 5, PT: 5,
  AU: 6, NZ: 7, JP: 8, SG: 6, HK: 6, MX: 7, BR: 9, IN: 5,
};
/** Every other destination. */
export const FALLBACK_RATE = 15;

export function defaultRate(country: string): number {
  return DEFAULT_RATES[country] ?? FALLBACK_RATE;
}

export function billedMinutes(durationSeconds: number): number {
  return durationSeconds <= 0 ? 0 : Math.ceil(durationSeconds / 60);
}

export function callCost(durationSeconds: number, perMinute: number): number {
  return billedMinutes(durationSeconds) * perMinute;
}
