import { getSupportedRegionCodes, parsePhoneNumber } from 'awesome-phonenumber';
import { z } from 'zod';

/**
 * Phone numbers: validated and normalised to E.164 with awesome-phonenumber (libphonenumber's
 * metadata). A number must be written in international form (leading `+` and the country code) and
 * be valid for its country; spaces, dashes, dots and parentheses are accepted and dropped.
 */
export function parseE164(input: string): { e164: string; country: string } | { error: string } {
  const trimmed = input.trim();
  if (!trimmed.startsWith('+')) {
    return { error: 'expected an international number with a leading + and the country code, e.g. +14155550123' };
  }
  const parsed = parsePhoneNumber(trimmed);
  if (!parsed.valid) {
    const region = parsed.regionCode ? ` for ${parsed.regionCode}` : '';
    return { error: `not a valid phone number${region}; check the digits (E.164 such as +14155550123)` };
  }
  return { e164: parsed.number.e164, country: parsed.regionCode };
}

/** The country (ISO 3166 alpha-2) of an E.164 number already validated. */
export function countryOf(e164: string): string {
  return parsePhoneNumber(e164).regionCode ?? 'ZZ';
}

/** A request field holding a phone number: answered (and stored) in E.164. */
export const phoneNumber = z
  .string()
  .max(32, 'a phone number is at most 32 characters')
  .transform((value, ctx) => {
    const parsed = parseE164(value);
    if ('error' in parsed) {
      ctx.addIssue({ code: 'custom', message: parsed.error });
      return z.NEVER;
    }
    return parsed.e164;
  })
  .meta({ example: '+14155550123', description: 'E.164: a leading + and the country code.' });

const REGIONS = new Set(getSupportedRegionCodes());

/** A request field holding a country with its own numbering plan: ISO 3166 alpha-2, answered in upper case. */
export const phoneCountry = z
  .string()
  .regex(/^[A-Za-z]{2}$/, 'expected an ISO 3166 alpha-2 country code such as GB')
  .transform((c) => c.toUpperCase())
  .refine((c) => REGIONS.has(c), { message: 'not a country with its own telephone numbering plan; use an ISO 3166 alpha-2 code such as GB or DE' });
