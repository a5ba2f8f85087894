import { z } from 'zod';
import { currency, metadata } from '../../api/http/schemas.ts';
import { address } from './schemas.ts';

/**
 * The request bodies of the commerce writes that GraphQL offers too: POST /v3/orders and the
 * `createOrder` mutation validate with the same schema, so both accept and refuse the same input.
 */

export const sku = z.string().trim().min(1).max(64).regex(/^[A-Za-z0-9][A-Za-z0-9._\-/]*$/, 'SKUs use letters, digits and . _ - /');

export const createOrderBody = z.strictObject({
  store_id: z.string().min(1).max(64),
  customer_id: z.string().min(1).max(64),
  currency: currency.describe('Lines are priced in this currency (fixed price, or converted with the stored exchange rate).'),
  line_items: z.array(z.strictObject({
    sku,
    quantity: z.number().int('quantities are whole units').min(1).max(10_000),
    variant: z.string().min(1).max(100).optional().describe("Name of one of the product's variants (its price applies)."),
  })).min(1, 'an order needs at least one line item').max(100),
  shipping_address: address,
  payment_status: z.enum(['unpaid', 'paid']).optional().describe('`paid` for an order paid at checkout; default unpaid.'),
  payment_id: z.string().min(1).max(64).optional().describe('The payment (`pay_…`) that paid it, if any.'),
  metadata: metadata.optional(),
});
