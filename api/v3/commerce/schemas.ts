import { z } from 'zod';

/** Schema pieces shared by the commerce routes. */

export const sku = z.string().trim().min(1).max(64).regex(/^[A-Za-z0-9][A-Za-z0-9._\-/]*$/, 'SKUs use letters, digits and . _ - /');

export { address } from '../../../domain/commerce/schemas.ts';

export const priceView = z.object({
  currency: z.string(),
  amount: z.number().int().nullable(),
  source: z.enum(['base', 'fixed', 'converted', 'unavailable']),
  exchange_rate: z.string().nullable(),
  formatted: z.string().nullable(),
});
