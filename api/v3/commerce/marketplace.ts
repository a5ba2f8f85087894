import { z } from 'zod';
import { MARKETPLACES, marketplaceAdapter } from '../../../domain/commerce/marketplaces.ts';
import { csv } from '../../http/schemas.ts';
import { listQuery, listRoute } from '../../http/pagination.ts';
import { route } from '../../http/route.ts';

const listingSchema = z
  .object({
    id: z.string(),
    object: z.literal('marketplace_listing'),
    livemode: z.boolean(),
    marketplace: z.string(),
    external_id: z.string(),
    product_id: z.string(),
    store_id: z.string(),
    sku: z.string(),
    title: z.string(),
    price: z.number().int().describe("Minor units of the marketplace's currency."),
    currency: z.string(),
    quantity: z.number().int(),
    status: z.enum(['active', 'out_of_stock', 'suppressed']),
    issues: z.array(z.string()),
    url: z.string(),
    synced_at: z.iso.datetime(),
    created_at: z.iso.datetime(),
  })
  .meta({ id: 'MarketplaceListing' });

const marketplaceParam = z.strictObject({
  marketplace: z.string().min(1).max(40).describe(`One of: ${[...MARKETPLACES.keys()].join(', ')}.`),
});

export const marketplaceRoutes = [
  listRoute({
    path: '/v3/marketplace/{marketplace}/listings', operationId: 'listMarketplaceListings', tag: 'Commerce',
    summary: 'Listings on an external marketplace (unknown marketplace: 404 naming the supported ones)',
    permission: 'commerce:read',
    params: marketplaceParam,
    query: z.strictObject({
      ...listQuery,
      status: csv(z.enum(['active', 'out_of_stock', 'suppressed'])).optional(),
      sku: csv(z.string().min(1)).optional(),
    }),
    item: listingSchema,
    list: ({ em, params, query }, page) => marketplaceAdapter(params.marketplace).listListings(em(), query, page),
  }),
  route({
    method: 'post', path: '/v3/marketplace/{marketplace}/listings/sync', operationId: 'syncMarketplaceListings', tag: 'Commerce',
    summary: 'Push the catalog (prices, stock) to a marketplace as listings', permission: 'commerce:write', status: 200,
    params: marketplaceParam,
    body: z.strictObject({ store_id: z.string().min(1).max(64).optional().describe('Only this store’s products; default every store.') }),
    response: z.object({
      object: z.literal('marketplace_sync'), marketplace: z.string(), listed: z.number().int(), active: z.number().int(),
      out_of_stock: z.number().int(), suppressed: z.number().int(), synced_at: z.iso.datetime(),
    }),
    async handler({ em, auth, params, body }) {
      const adapter = marketplaceAdapter(params.marketplace);
      return { body: await adapter.syncFromCatalog(em(), auth, { storeId: body.store_id }) };
    },
  }),
];
