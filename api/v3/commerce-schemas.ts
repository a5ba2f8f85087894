import { z } from 'zod';
import { SUPPORTED_CURRENCIES, isSupportedCurrency } from '../../domain/money.ts';

/** Schema pieces shared by the commerce routes. */

export const currency = z
  .string()
  .transform((c) => c.trim().toUpperCase())
  .refine(isSupportedCurrency, { message: `expected an ISO 4217 currency code we support, e.g. USD, EUR, JPY (supported: ${SUPPORTED_CURRENCIES.join(', ')})` })
  .meta({ example: 'USD' });

/** Integer minor units of a currency (cents; yen; fils). */
export const minorUnits = z.number().int('amounts are integers in minor units (e.g. cents)').nonnegative().max(Number.MAX_SAFE_INTEGER);

export const sku = z.string().trim().min(1).max(64).regex(/^[A-Za-z0-9][A-Za-z0-9._\-/]*$/, 'SKUs use letters, digits and . _ - /');

export const address = z.strictObject({
  name: z.string().max(200).optional(),
  line1: z.string().max(200).optional(),
  line2: z.string().max(200).optional(),
  address: z.string().max(400).optional().describe('Single-line form, as the shipping area sends it.'),
  city: z.string().max(100).optional(),
  state: z.string().max(100).optional(),
  postal_code: z.string().max(20).optional(),
  country: z.string().regex(/^[A-Z]{2}$/, 'a two-letter ISO 3166-1 country code such as US').optional(),
  phone: z.string().max(30).optional(),
});

export const prefixedId = (prefix: string, name: string) =>
  z.string().min(1).max(64).describe(`${name} id (\`${prefix}_…\`).`);

export const priceView = z.object({
  currency: z.string(),
  amount: z.number().int().nullable(),
  source: z.enum(['base', 'fixed', 'converted', 'unavailable']),
  exchange_rate: z.string().nullable(),
  formatted: z.string().nullable(),
});
