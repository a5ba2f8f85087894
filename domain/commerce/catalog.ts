import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { conflict, notFound } from '../../platform/errors.ts';
import { newId } from '../../platform/ids.ts';
import { toDecimalString } from '../money.ts';
import { readScopedOr404, scopeColumns, type Scope } from '../scope.ts';
import { Product, Store, type Variant } from './entities.ts';
import { loadRates, priceIn, type PriceView, type RateTable } from './pricing.ts';
import type { ProductView } from './schemas.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import { textContains } from '../search.ts';

/** A fulfilment deadline of 48 hours unless the store says otherwise. */
export const DEFAULT_FULFILLMENT_DEADLINE_SECONDS = 48 * 3600;

export interface StoreView {
  id: string;
  object: 'store';
  livemode: boolean;
  name: string;
  url: string | null;
  default_currency: string;
  fulfillment_deadline_seconds: number;
  metadata: Record<string, string>;
  created_at: string;
}

export interface StoreInput {
  name: string;
  url?: string;
  default_currency: string;
  fulfillment_deadline_seconds?: number;
  metadata?: Record<string, string>;
}

export function storeView(s: Store): StoreView {
  return {
    id: s.id, object: 'store', livemode: s.livemode, name: s.name, url: s.url ?? null,
    default_currency: s.defaultCurrency, fulfillment_deadline_seconds: s.fulfillmentDeadlineSeconds,
    metadata: s.metadata, created_at: s.createdAt.toISOString(),
  };
}

export async function createStore(em: EntityManager, scope: Scope, input: StoreInput): Promise<StoreView> {
  const store = em.create(Store, {
    id: newId('store'), ...scopeColumns(scope), name: input.name, url: input.url ?? null,
    defaultCurrency: input.default_currency,
    fulfillmentDeadlineSeconds: input.fulfillment_deadline_seconds ?? DEFAULT_FULFILLMENT_DEADLINE_SECONDS,
    metadata: input.metadata ?? {},
  });
  await em.flush();
  return storeView(store);
}

export async function findStore(em: EntityManager, id: string): Promise<Store> {
  const store = await em.findOne(Store, { id });
  if (!store) throw notFound('store', id);
  return store;
}

/** Store by id for GET /v3/stores/{id}: one prepared statement, no EntityManager (readScopedOr404). */
export async function readStore(orm: MikroORM, scope: Scope, id: string): Promise<StoreView> {
  return storeView(await readScopedOr404(orm, scope, Store, id, 'store'));
}

export async function listStores(em: EntityManager, page: PageArgs): Promise<StoreView[]> {
  const rows = await em.find(Store, page.where, { orderBy: { id: page.direction }, limit: page.limit + 1 });
  return rows.map(storeView);
}

export interface PageArgs {
  where: Record<string, unknown>;
  direction: 'asc' | 'desc';
  limit: number;
}

export interface InventorySettings {
  track_quantity: boolean;
  unlimited: boolean;
  reorder_point: number;
  safety_stock: number;
}

/** The Product resource (its schema is `productSchema` in schemas.ts). */
export type { ProductView } from './schemas.ts';

export interface ProductInput {
  name: string;
  sku: string;
  description?: string;
  price: number;
  currency?: string;
  prices?: Record<string, number>;
  categories?: string[];
  variants?: Variant[];
  inventory?: Partial<InventorySettings>;
  active?: boolean;
  metadata?: Record<string, string>;
}

export function productView(p: Product): ProductView {
  return {
    id: p.id, object: 'product', livemode: p.livemode, store_id: p.storeId, name: p.name,
    description: p.description ?? null, sku: p.sku, price: p.price, currency: p.currency, prices: p.prices,
    categories: p.categories, variants: p.variants,
    inventory: { track_quantity: p.trackQuantity, unlimited: p.unlimited, reorder_point: p.reorderPoint, safety_stock: p.safetyStock },
    active: p.active, metadata: p.metadata, created_at: p.createdAt.toISOString(), updated_at: p.updatedAt.toISOString(),
  };
}

/** Creates a product; a SKU already used in the store is 409 `sku_already_exists`. */
export async function createProduct(
  em: EntityManager, scope: Scope, storeId: string, input: ProductInput,
): Promise<ProductView> {
  const store = await findStore(em, storeId);
  const currency = input.currency ?? store.defaultCurrency;
  const product = em.create(Product, {
    id: newId('product'), ...scopeColumns(scope), storeId: store.id, name: input.name,
    description: input.description ?? null, sku: input.sku, price: input.price, currency,
    prices: Object.fromEntries(Object.entries(input.prices ?? {}).filter(([c]) => c !== currency)),
    categories: [...new Set(input.categories ?? [])],
    variants: (input.variants ?? []).map((v) => ({ name: v.name, price: v.price, features: v.features ?? [] })),
    trackQuantity: input.inventory?.track_quantity ?? true,
    unlimited: input.inventory?.unlimited ?? false,
    reorderPoint: input.inventory?.reorder_point ?? 0,
    safetyStock: input.inventory?.safety_stock ?? 0,
    active: input.active ?? true,
    metadata: input.metadata ?? {},
  });
  try {
    await em.flush();
  } catch (err) {
    if (isUniqueViolation(err, 'products_store_sku')) {
      throw conflict(
        'sku_already_exists',
        `Store ${store.id} already has a product with SKU '${input.sku}'.`,
        'Use a SKU that is unique within the store, or update the existing product instead.',
        { sku: input.sku, store_id: store.id },
      );
    }
    throw err;
  }
  return productView(product);
}

/** A product by id for GET /v3/products/{id}: one prepared statement, no EntityManager (readScopedOr404). */
export async function readProduct(orm: MikroORM, scope: Scope, id: string): Promise<ProductView> {
  return productView(await readScopedOr404(orm, scope, Product, id, 'product'));
}

/** Products by id (those of the EntityManager's account and mode; others are absent): GraphQL's loader. */
export async function productsByIds(em: EntityManager, ids: readonly string[]): Promise<ProductView[]> {
  return ids.length ? (await em.find(Product, { id: { $in: [...new Set(ids)] } })).map(productView) : [];
}

export interface ProductFilters {
  store_id?: string[];
  category?: string[];
  sku?: string[];
  q?: string;
  active?: boolean;
}

/** What the products' `?q=` searches (the trigram index of migration 0167 spells the same text). */
const PRODUCT_SEARCH_COLUMNS = ['name', 'sku', 'description'] as const;

export async function findProducts(em: EntityManager, filters: ProductFilters, page: PageArgs): Promise<Product[]> {
  const where: Record<string, unknown>[] = [page.where];
  if (filters.store_id) where.push({ storeId: { $in: filters.store_id } });
  if (filters.category) where.push({ categories: { $overlap: filters.category } });
  if (filters.sku) where.push({ sku: { $in: filters.sku } });
  if (filters.active !== undefined) where.push({ active: filters.active });
  if (filters.q) where.push(textContains(PRODUCT_SEARCH_COLUMNS, filters.q));
  return em.find(Product, { $and: where }, { orderBy: { id: page.direction }, limit: page.limit + 1 });
}

export async function listProducts(em: EntityManager, filters: ProductFilters, page: PageArgs): Promise<ProductView[]> {
  return (await findProducts(em, filters, page)).map(productView);
}

/** Units available to sell per SKU, summed over warehouses. */
export async function availableBySku(em: EntityManager, scope: Scope, skus: string[]): Promise<Map<string, number>> {
  if (!skus.length) return new Map();
  const rows = await em.execute<{ sku: string; available: string }[]>(
    `select sku, sum(quantity - reserved)::int8 as available from inventory_levels
      where account_id = ? and livemode = ? and sku in (select jsonb_array_elements_text(?::jsonb)) group by sku`,
    [scope.accountId, scope.livemode, JSON.stringify([...new Set(skus)])],
  );
  return new Map(rows.map((r) => [r.sku, Number(r.available)]));
}

export interface CatalogPrice extends PriceView {
  /** The amount in major units as an exact decimal string, e.g. "19.99" or "3024". */
  formatted: string | null;
}

export interface CatalogProductView {
  id: string;
  object: 'catalog_product';
  livemode: boolean;
  store_id: string;
  name: string;
  description: string | null;
  sku: string;
  categories: string[];
  base_price: { amount: number; currency: string };
  prices: CatalogPrice[];
  variants: { name: string; features: string[]; prices: CatalogPrice[] }[];
  availability: { track_quantity: boolean; unlimited: boolean; available: number | null; in_stock: boolean };
  created_at: string;
}

function catalogPrice(p: PriceView): CatalogPrice {
  return { ...p, formatted: p.amount === null ? null : toDecimalString(p.amount, p.currency) };
}

function pricesFor(amount: number, currency: string, fixed: Record<string, number>, targets: string[], rates: RateTable): CatalogPrice[] {
  return targets.map((t) => catalogPrice(priceIn({ amount, currency, fixed }, t, rates)));
}

/**
 * The catalog: products with prices in every requested currency (default: the product's own).
 * Variant prices are converted the same way (fixed per-currency prices apply to the base price only).
 */
export async function listCatalog(
  em: EntityManager, scope: Scope, filters: ProductFilters & { currency?: string[] }, page: PageArgs,
): Promise<CatalogProductView[]> {
  const products = await findProducts(em, { ...filters, active: true }, page);
  const rates = filters.currency ? await loadRates(em, scope) : new Map<string, string>();
  const stock = await availableBySku(em, scope, products.map((p) => p.sku));
  return products.map((p) => {
    const targets = filters.currency ?? [p.currency];
    const available = p.unlimited || !p.trackQuantity ? null : (stock.get(p.sku) ?? 0);
    return {
      id: p.id, object: 'catalog_product', livemode: p.livemode, store_id: p.storeId, name: p.name,
      description: p.description ?? null, sku: p.sku, categories: p.categories,
      base_price: { amount: p.price, currency: p.currency },
      prices: pricesFor(p.price, p.currency, p.prices, targets, rates),
      variants: p.variants.map((v) => ({ name: v.name, features: v.features, prices: pricesFor(v.price, p.currency, {}, targets, rates) })),
      availability: { track_quantity: p.trackQuantity, unlimited: p.unlimited, available, in_stock: available === null || available > 0 },
      created_at: p.createdAt.toISOString(),
    };
  });
}

/** The pre-catalog product shape served by the deprecated `GET /v3/legacy/products`. */
export interface LegacyProduct {
  product_id: string;
  store: string;
  title: string;
  sku: string;
  /** Decimal string in major units, as the old API sent it. */
  price: string;
  currency: string;
  category: string | null;
  in_stock: boolean;
}

export async function listLegacyProducts(
  em: EntityManager, scope: Scope, page: number, perPage: number,
): Promise<{ products: LegacyProduct[]; total: number; page: number; per_page: number }> {
  const [rows, total] = await em.findAndCount(Product, { active: true }, { orderBy: { id: 'asc' }, limit: perPage, offset: (page - 1) * perPage });
  const stock = await availableBySku(em, scope, rows.map((p) => p.sku));
  return {
    products: rows.map((p) => ({
      product_id: p.id, store: p.storeId, title: p.name, sku: p.sku, price: toDecimalString(p.price, p.currency),
      currency: p.currency, category: p.categories[0] ?? null,
      in_stock: p.unlimited || !p.trackQuantity || (stock.get(p.sku) ?? 0) > 0,
    })),
    total, page, per_page: perPage,
  };
}
