import { z } from 'zod';
import { createProduct, createStore, findStore, listProducts, listStores, readProduct, readStore } from '../../../domain/commerce/catalog.ts';
import { MAX_STOCK } from '../../../domain/commerce/inventory.ts';
import { productSchema } from '../../../domain/commerce/schemas.ts';
import { count, csv, metadata, currency, minorUnits } from '../../http/schemas.ts';
import { listQuery, listRoute } from '../../http/pagination.ts';
import { getRoute, route } from '../../http/route.ts';
import { sku } from './schemas.ts';

const storeSchema = z
  .object({
    id: z.string(),
    object: z.literal('store'),
    livemode: z.boolean(),
    name: z.string(),
    url: z.string().nullable(),
    default_currency: z.string(),
    fulfillment_deadline_seconds: z.number().int(),
    metadata: z.record(z.string(), z.string()),
    created_at: z.iso.datetime(),
  })
  .meta({ id: 'Store' });

const createStoreBody = z.strictObject({
  name: z.string().trim().min(1).max(200),
  url: z.url().max(500).optional(),
  default_currency: currency.default('USD').describe('Currency of new products unless they name one.'),
  fulfillment_deadline_seconds: z.number().int().min(1).max(30 * 86400).optional()
    .describe('How long after an order is placed its fulfilment counts as delayed (order.fulfillment.delayed). Default 172800 (48 hours).'),
  metadata: metadata.optional(),
});

const variant = z.strictObject({
  name: z.string().trim().min(1).max(100),
  price: minorUnits.describe('Minor units of the product currency.'),
  features: z.array(z.string().max(200)).max(50).default([]),
});

const createProductBody = z
  .strictObject({
    name: z.string().trim().min(1).max(300),
    sku: sku.describe('Unique within the store.'),
    description: z.string().max(5000).optional(),
    price: minorUnits.describe('Minor units of `currency` (cents; whole yen for JPY).'),
    currency: currency.optional().describe("Defaults to the store's default currency."),
    prices: z.record(currency, minorUnits).optional()
      .describe('Fixed prices in other currencies (minor units), used by the catalog instead of converting.'),
    categories: z.array(z.string().trim().min(1).max(100)).max(50).optional(),
    variants: z.array(variant).max(100)
      .refine((vs) => new Set(vs.map((v) => v.name)).size === vs.length, 'variant names must be unique within a product').optional(),
    inventory: z.strictObject({
      track_quantity: z.boolean().default(true),
      unlimited: z.boolean().default(false),
      reorder_point: count(MAX_STOCK).optional().describe(`Default reorder point of new stock rows (inventory.low_stock); 0 to ${MAX_STOCK}.`),
      safety_stock: count(MAX_STOCK).optional().describe(`0 to ${MAX_STOCK}.`),
    }).optional(),
    active: z.boolean().optional(),
    metadata: metadata.optional(),
  });


const storeId = z.strictObject({ store_id: z.string().min(1).max(64) });
const productId = z.strictObject({ product_id: z.string().min(1).max(64) });

const listProductsQuery = z.strictObject({
  ...listQuery,
  category: csv(z.string().min(1)).optional().describe('Products in any of these categories.'),
  sku: csv(z.string().min(1)).optional(),
  q: z.string().min(1).max(200).optional().describe('Text matched literally (case-insensitive) in name, SKU and description.'),
});

export const storeRoutes = [
  route({
    method: 'post', path: '/v3/stores', operationId: 'createStore', tag: 'Commerce',
    summary: 'Create a store', permission: 'commerce:write', status: 201,
    body: createStoreBody, response: storeSchema,
    async handler({ em, auth, body }) {
      const store = await createStore(em(), auth, body);
      return { body: store, headers: { Location: `/v3/stores/${store.id}` } };
    },
  }),
  getRoute({
    path: '/v3/stores/{store_id}', operationId: 'getStore', tag: 'Commerce',
    summary: 'Retrieve a store', permission: 'commerce:read', readOnly: true,
    params: storeId, response: storeSchema,
    get: ({ deps, auth, params }) => readStore(deps.orm, auth, params.store_id),
  }),
  listRoute({
    path: '/v3/stores', operationId: 'listStores', tag: 'Commerce',
    summary: 'List stores', permission: 'commerce:read', item: storeSchema,
    list: ({ em }, page) => listStores(em(), page),
  }),
  route({
    method: 'post', path: '/v3/stores/{store_id}/products', operationId: 'createProduct', tag: 'Commerce',
    summary: 'Create a product in a store (SKU unique per store: a duplicate is 409 sku_already_exists)',
    permission: 'commerce:write', status: 201,
    params: storeId, body: createProductBody, response: productSchema,
    async handler({ em, auth, params, body }) {
      const product = await createProduct(em(), auth, params.store_id, body);
      return { body: product, headers: { Location: `/v3/products/${product.id}` } };
    },
  }),
  listRoute({
    path: '/v3/stores/{store_id}/products', operationId: 'listStoreProducts', tag: 'Commerce',
    summary: "List a store's products", permission: 'commerce:read',
    params: storeId, query: listProductsQuery, item: productSchema,
    async list({ em, params, query }, page) {
      await findStore(em(), params.store_id);
      return listProducts(em(), { ...query, store_id: [params.store_id] }, page);
    },
  }),
  getRoute({
    path: '/v3/products/{product_id}', operationId: 'getProduct', tag: 'Commerce',
    summary: 'Retrieve a product', permission: 'commerce:read', readOnly: true,
    params: productId, response: productSchema,
    get: ({ deps, auth, params }) => readProduct(deps.orm, auth, params.product_id),
  }),
];
