// The library without its country names: its Node entry parses all 78 languages' names at import,
// and only the codes are checked here.
import countries from 'i18n-iso-countries/index.js';
import postalCodes from 'postal-codes-js';
import type { FieldError } from '../../platform/errors.ts';

/** An ISO 3166-1 alpha-2 code that names a country (upper case). */
export function isCountry(code: string): boolean {
  return /^[A-Z]{2}$/.test(code) && countries.isValid(code);
}

/** Problems with a country and postal code pair, as field errors under `path`. */
export function postalProblems(country: string, postal: string, path: string): FieldError[] {
  if (!isCountry(country)) return [{ path: `${path}country`, message: `'${country}' is not an ISO 3166-1 alpha-2 country code (e.g. US, GB, DE)` }];
  const result = postalCodes.validate(country, postal);
  if (result === true) return [];
  return [{ path: `${path}postal_code`, message: `'${postal}' is not a valid postal code for ${country}` }];
}
