import { z } from 'zod';
import { listCatalog, listLegacyProducts } from '../../../domain/commerce/catalog.ts';
import { listRates, setRates } from '../../../domain/commerce/pricing.ts';
import { INT32_MAX, csv, currency } from '../../http/schemas.ts';
import { listOf, listQuery, listRoute } from '../../http/pagination.ts';
import { route } from '../../http/route.ts';
import { priceView } from './schemas.ts';

/**
 * `GET /v3/legacy/products` was deprecated by v3.2.0 (2024-12-01) and is removed in v4.0. Its
 * responses say so (RFC 9745 Deprecation, RFC 8594 Sunset) and link the successor.
 */
export const LEGACY_PRODUCTS_DEPRECATED_AT = new Date('2024-12-01T00:00:00Z');
export const LEGACY_PRODUCTS_SUNSET_AT = new Date('2027-06-30T23:59:59Z');
export const LEGACY_PRODUCTS_HEADERS: Record<string, string> = {
  Deprecation: `@${Math.floor(LEGACY_PRODUCTS_DEPRECATED_AT.getTime() / 1000)}`,
  Sunset: LEGACY_PRODUCTS_SUNSET_AT.toUTCString(),
  Link: '</v3/catalog/products>; rel="successor-version"',
};

const catalogProductSchema = z
  .object({
    id: z.string(),
    object: z.literal('catalog_product'),
    livemode: z.boolean(),
    store_id: z.string(),
    name: z.string(),
    description: z.string().nullable(),
    sku: z.string(),
    categories: z.array(z.string()),
    base_price: z.object({ amount: z.number().int(), currency: z.string() }),
    prices: z.array(priceView),
    variants: z.array(z.object({ name: z.string(), features: z.array(z.string()), prices: z.array(priceView) })),
    availability: z.object({ track_quantity: z.boolean(), unlimited: z.boolean(), available: z.number().int().nullable(), in_stock: z.boolean() }),
    created_at: z.iso.datetime(),
  })
  .meta({ id: 'CatalogProduct' });

const catalogQuery = z.strictObject({
  ...listQuery,
  currency: csv(currency).optional()
    .describe("Currencies to price in, comma-separated (e.g. USD,JPY). Default: each product's own currency."),
  store_id: csv(z.string().min(1)).optional(),
  category: csv(z.string().min(1)).optional(),
  q: z.string().min(1).max(200).optional().describe('Text matched literally (case-insensitive) in name, SKU and description.'),
});

const exchangeRateSchema = z
  .object({ object: z.literal('exchange_rate'), base: z.string(), quote: z.string(), rate: z.string(), updated_at: z.iso.datetime() })
  .meta({ id: 'ExchangeRate' });

const rateValue = z
  .union([z.string().regex(/^\d{1,18}(\.\d{1,12})?$/, 'a positive decimal such as "151.25"'), z.number().positive().finite()])
  .transform((v) => (typeof v === 'number' ? String(v) : v))
  .refine((v) => /^\d+(\.\d+)?$/.test(v) && Number(v) > 0 && (v.split('.')[1]?.length ?? 0) <= 12, 'a positive rate with at most 12 decimals');

const setRatesBody = z.strictObject({
  base: currency,
  rates: z.record(currency, rateValue).refine((r) => Object.keys(r).length >= 1 && Object.keys(r).length <= 200, 'between 1 and 200 rates')
    .describe('Units of each currency per one unit of `base`, e.g. { "JPY": "151.25", "EUR": "0.92" }. Strings keep every digit.'),
}).refine((b) => !(b.base in b.rates), { path: ['rates'], message: 'a currency has no rate to itself' });

const legacyQuery = z.strictObject({
  page: z.coerce.number().int().min(1).max(INT32_MAX, `must be at most ${INT32_MAX}`).default(1),
  per_page: z.coerce.number().int().min(1).max(100).default(20),
});

const legacySchema = z.object({
  products: z.array(z.object({
    product_id: z.string(), store: z.string(), title: z.string(), sku: z.string(), price: z.string(), currency: z.string(),
    category: z.string().nullable(), in_stock: z.boolean(),
  })),
  total: z.number().int(),
  page: z.number().int(),
  per_page: z.number().int(),
}).meta({ id: 'LegacyProductList', deprecated: true });

export const catalogRoutes = [
  listRoute({
    path: '/v3/catalog/products', operationId: 'listCatalogProducts', tag: 'Commerce',
    summary: 'The product catalog with multi-currency prices', permission: 'commerce:read',
    query: catalogQuery, item: catalogProductSchema,
    list: ({ em, auth, query }, page) => listCatalog(em(), auth, query, page),
  }),
  route({
    method: 'get', path: '/v3/catalog/exchange-rates', operationId: 'listExchangeRates', tag: 'Commerce',
    summary: 'The exchange rates the catalog converts prices with', permission: 'commerce:read', status: 200,
    response: listOf(exchangeRateSchema),
    async handler({ em, auth, req }) {
      const data = await listRates(em(), auth);
      return { body: { object: 'list', data, has_more: false, next_cursor: null, url: req.path } };
    },
  }),
  route({
    method: 'put', path: '/v3/catalog/exchange-rates', operationId: 'setExchangeRates', tag: 'Commerce',
    summary: 'Set exchange rates from one base currency', permission: 'commerce:write', status: 200,
    body: setRatesBody, response: listOf(exchangeRateSchema),
    async handler({ em, auth, req, body }) {
      const data = await setRates(em(), auth, body.base, body.rates as Record<string, string>);
      return { body: { object: 'list', data, has_more: false, next_cursor: null, url: req.path } };
    },
  }),
  route({
    method: 'get', path: '/v3/legacy/products', operationId: 'listLegacyProducts', tag: 'Commerce',
    summary: 'Deprecated: the old product list. Use GET /v3/catalog/products (removed in v4.0)',
    permission: 'commerce:read', status: 200,
    query: legacyQuery, response: legacySchema,
    async handler({ em, auth, query }) {
      return { body: await listLegacyProducts(em(), auth, query.page, query.per_page), headers: LEGACY_PRODUCTS_HEADERS };
    },
  }),
];
