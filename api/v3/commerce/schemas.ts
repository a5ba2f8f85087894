import { z } from 'zod';

/** Schema pieces shared by the commerce routes. */

export { sku } from '../../../domain/commerce/requests.ts';

export { address } from '../../../domain/commerce/schemas.ts';

export const priceView = z.object({
  currency: z.string(),
  amount: z.number().int().nullable(),
  source: z.enum(['base', 'fixed', 'converted', 'unavailable']),
  exchange_rate: z.string().nullable(),
  formatted: z.string().nullable(),
});
