import { createHash } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { ApiError } from '../../platform/errors.ts';
import { newId } from '../../platform/ids.ts';
import type { Scope } from '../scope.ts';
import { availableBySku, type PageArgs } from './catalog.ts';
import { MarketplaceListing, Product } from './entities.ts';
import { loadRates, priceIn } from './pricing.ts';

/**
 * Marketplace adapters. Each external marketplace (Amazon, eBay, Etsy, …) is reached through an
 * adapter with one interface: push the catalog as listings, read the listings back. The sandbox
 * adapters play the marketplace: they apply its rules (currency, title length, identifiers, what
 * makes a listing inactive) and keep its listings in `marketplace_listings`. A real adapter
 * implements the same two calls against the marketplace's API.
 */

export interface ListingView {
  id: string;
  object: 'marketplace_listing';
  livemode: boolean;
  marketplace: string;
  external_id: string;
  product_id: string;
  store_id: string;
  sku: string;
  title: string;
  /** Minor units of `currency` (the marketplace's currency). */
  price: number;
  currency: string;
  quantity: number;
  /** active; out_of_stock (no units to sell); suppressed (the marketplace refused it: see `issues`). */
  status: 'active' | 'out_of_stock' | 'suppressed';
  issues: string[];
  url: string;
  synced_at: string;
  created_at: string;
}

export interface SyncResult {
  object: 'marketplace_sync';
  marketplace: string;
  listed: number;
  active: number;
  out_of_stock: number;
  suppressed: number;
  synced_at: string;
}

export interface MarketplaceAdapter {
  name: string;
  displayName: string;
  currency: string;
  syncFromCatalog(em: EntityManager, scope: Scope, opts: { storeId?: string }): Promise<SyncResult>;
  listListings(em: EntityManager, filters: { status?: string[]; sku?: string[] }, page: PageArgs): Promise<ListingView[]>;
}

interface SandboxRules {
  name: string;
  displayName: string;
  currency: string;
  maxTitle: number;
  /** Units the marketplace shows for products that do not track stock. */
  unlimitedQuantity: number;
  externalId(productId: string): string;
  url(externalId: string): string;
}

function digest(text: string, length: number, alphabet: string): string {
  const bytes = createHash('sha256').update(text).digest();
  let out = '';
  for (let i = 0; i < length; i++) out += alphabet[bytes[i]! % alphabet.length];
  return out;
}

function listingView(l: MarketplaceListing): ListingView {
  return {
    id: l.id, object: 'marketplace_listing', livemode: l.livemode, marketplace: l.marketplace, external_id: l.externalId,
    product_id: l.productId, store_id: l.storeId, sku: l.sku, title: l.title, price: l.price, currency: l.currency,
    quantity: l.quantity, status: l.status as ListingView['status'], issues: l.issues, url: l.url,
    synced_at: l.syncedAt.toISOString(), created_at: l.createdAt.toISOString(),
  };
}

/** Products pushed per sync call. */
const SYNC_LIMIT = 5000;

function sandboxAdapter(rules: SandboxRules): MarketplaceAdapter {
  return {
    name: rules.name,
    displayName: rules.displayName,
    currency: rules.currency,
    async syncFromCatalog(em, scope, opts) {
      const products = await em.find(Product, { active: true, ...(opts.storeId ? { storeId: opts.storeId } : {}) }, { orderBy: { id: 'asc' }, limit: SYNC_LIMIT });
      const rates = await loadRates(em, scope);
      const stock = await availableBySku(em, scope, products.map((p) => p.sku));
      const rows = products.map((p) => {
        const issues: string[] = [];
        const price = priceIn({ amount: p.price, currency: p.currency, fixed: p.prices }, rules.currency, rates);
        if (price.amount === null) issues.push(`no ${rules.currency} price: set prices.${rules.currency} on the product or an exchange rate ${p.currency}→${rules.currency}`);
        if (price.amount === 0) issues.push('price must be above zero');
        if (p.name.length > rules.maxTitle) issues.push(`title longer than ${rules.maxTitle} characters`);
        const quantity = p.unlimited || !p.trackQuantity ? rules.unlimitedQuantity : Math.max(stock.get(p.sku) ?? 0, 0);
        const status = issues.length ? 'suppressed' : quantity > 0 ? 'active' : 'out_of_stock';
        const externalId = rules.externalId(p.id);
        return {
          id: newId('listing'), external_id: externalId, product_id: p.id, store_id: p.storeId, sku: p.sku,
          title: p.name.slice(0, rules.maxTitle), price: price.amount ?? 0, currency: rules.currency, quantity, status,
          issues, url: rules.url(externalId),
        };
      });
      const syncedAt = new Date();
      if (rows.length) {
        await em.execute(
          `insert into marketplace_listings as l (id, account_id, livemode, marketplace, external_id, product_id, store_id, sku, title,
                                                  price, currency, quantity, status, issues, url, synced_at, created_at)
           select t.id, ?, ?, ?, t.external_id, t.product_id, t.store_id, t.sku, t.title, t.price, t.currency, t.quantity, t.status,
                  t.issues, t.url, ?::timestamptz, ?::timestamptz
             from jsonb_to_recordset(?::jsonb) as t(id text, external_id text, product_id text, store_id text, sku text, title text,
                                                    price bigint, currency text, quantity int, status text, issues jsonb, url text)
           on conflict (account_id, livemode, marketplace, product_id) do update set
             sku = excluded.sku, title = excluded.title, price = excluded.price, currency = excluded.currency,
             quantity = excluded.quantity, status = excluded.status, issues = excluded.issues, synced_at = excluded.synced_at`,
          [scope.accountId, scope.livemode, rules.name, syncedAt.toISOString(), syncedAt.toISOString(), JSON.stringify(rows)],
        );
      }
      return {
        object: 'marketplace_sync', marketplace: rules.name, listed: rows.length,
        active: rows.filter((r) => r.status === 'active').length,
        out_of_stock: rows.filter((r) => r.status === 'out_of_stock').length,
        suppressed: rows.filter((r) => r.status === 'suppressed').length,
        synced_at: syncedAt.toISOString(),
      };
    },
    async listListings(em, filters, page) {
      const where: Record<string, unknown>[] = [page.where, { marketplace: rules.name }];
      if (filters.status) where.push({ status: { $in: filters.status } });
      if (filters.sku) where.push({ sku: { $in: filters.sku } });
      const rows = await em.find(MarketplaceListing, { $and: where }, { orderBy: { id: page.direction }, limit: page.limit + 1 });
      return rows.map(listingView);
    },
  };
}

const UPPER = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';
const DIGITS = '0123456789';

/** The marketplaces this deployment can list on (sandbox adapters; a real one replaces its entry). */
export const MARKETPLACES: ReadonlyMap<string, MarketplaceAdapter> = new Map([
  sandboxAdapter({
    name: 'amazon', displayName: 'Amazon (US)', currency: 'USD', maxTitle: 200, unlimitedQuantity: 999,
    externalId: (id) => `B0${digest(`amazon:${id}`, 8, UPPER)}`,
    url: (ext) => `https://sandbox.amazon.example/dp/${ext}`,
  }),
  sandboxAdapter({
    name: 'ebay', displayName: 'eBay (US)', currency: 'USD', maxTitle: 80, unlimitedQuantity: 999,
    externalId: (id) => `1${digest(`ebay:${id}`, 11, DIGITS)}`,
    url: (ext) => `https://sandbox.ebay.example/itm/${ext}`,
  }),
  sandboxAdapter({
    name: 'etsy', displayName: 'Etsy', currency: 'USD', maxTitle: 140, unlimitedQuantity: 999,
    externalId: (id) => `${1 + (parseInt(digest(`etsy:${id}`, 9, DIGITS), 10) % 9_000_000_000)}`,
    url: (ext) => `https://sandbox.etsy.example/listing/${ext}`,
  }),
  sandboxAdapter({
    name: 'rakuten', displayName: 'Rakuten Ichiba (JP)', currency: 'JPY', maxTitle: 127, unlimitedQuantity: 999,
    externalId: (id) => `rk-${digest(`rakuten:${id}`, 10, UPPER).toLowerCase()}`,
    url: (ext) => `https://sandbox.rakuten.example/item/${ext}`,
  }),
].map((a) => [a.name, a]));

export function marketplaceAdapter(name: string): MarketplaceAdapter {
  const adapter = MARKETPLACES.get(name.toLowerCase());
  if (adapter) return adapter;
  const supported = [...MARKETPLACES.keys()];
  throw new ApiError({
    status: 404, code: 'marketplace_not_supported', title: 'Not Found',
    detail: `'${name}' is not a supported marketplace. Supported: ${supported.join(', ')}.`,
    suggestion: `Use one of: ${supported.join(', ')} (e.g. /v3/marketplace/${supported[0]}/listings).`,
    extensions: { supported_marketplaces: supported },
  });
}
