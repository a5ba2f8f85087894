import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { notFound } from '../../platform/errors.ts';
import { readScopedOr404, scopeColumns, type Scope } from '../scope.ts';
import { Vendor } from './entities.ts';
import type { VendorView } from './schemas.ts';

export function vendorView(v: Vendor): VendorView {
  return {
    id: v.id, object: 'vendor', livemode: v.livemode, name: v.name, email: v.email ?? null, currency: v.currency,
    payment_terms: v.paymentTerms, metadata: v.metadata, created_at: v.createdAt.toISOString(),
  };
}

export async function createVendor(
  em: EntityManager, scope: Scope,
  input: { id: string; name: string; email: string | null; currency: string; paymentTerms: string; metadata: Record<string, string> },
): Promise<VendorView> {
  const existing = await em.findOne(Vendor, { id: input.id });
  if (existing) return vendorView(existing);
  const vendor = em.create(Vendor, {
    id: input.id, ...scopeColumns(scope), name: input.name, email: input.email, currency: input.currency, paymentTerms: input.paymentTerms,
    metadata: input.metadata, createdAt: new Date(),
  });
  await em.flush();
  return vendorView(vendor);
}

export async function findVendor(em: EntityManager, id: string): Promise<Vendor> {
  const vendor = await em.findOne(Vendor, { id });
  if (!vendor) throw notFound('vendor', id);
  return vendor;
}

/** Vendor by id for GET /v3/vendors/{id}: one prepared statement, no EntityManager (readScopedOr404). */
export async function readVendor(orm: MikroORM, scope: Scope, id: string): Promise<VendorView> {
  return vendorView(await readScopedOr404(orm, scope, Vendor, id, 'vendor'));
}

export async function listVendors(em: EntityManager, page: { where: Record<string, unknown>; direction: 'asc' | 'desc'; limit: number }): Promise<VendorView[]> {
  return (await em.find(Vendor, page.where, { orderBy: { id: page.direction }, limit: page.limit + 1 })).map(vendorView);
}
