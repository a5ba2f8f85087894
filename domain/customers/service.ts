import { LockMode, raw, type EntityManager, type MikroORM } from '@mikro-orm/postgresql';
import { notFound, type FieldError } from '../../platform/errors.ts';
import { newId } from '../../platform/ids.ts';
import { recordEvent } from '../events/outbox.ts';
import { readScopedOr404, scopeColumns, type Scope } from '../scope.ts';
import { Customer } from './entities.ts';
import { textContains } from '../search.ts';
import type { Company, CustomerType, CustomerView } from './schemas.ts';

export type { CustomerView } from './schemas.ts';

export interface CustomerInput {
  email?: string | null;
  name?: string | null;
  first_name?: string | null;
  last_name?: string | null;
  customer_type?: CustomerType | null;
  company?: Company | null;
  segments?: string[];
  custom_fields?: Record<string, unknown>;
  metadata?: Record<string, string | null>;
}

export interface CustomerFilters {
  email?: string[];
  segment?: string[];
  customer_type?: CustomerType[];
  created_gte?: Date;
  created_lte?: Date;
  q?: string;
}

export function customerView(c: Readonly<Customer>): CustomerView {
  return {
    id: c.id,
    object: 'customer',
    livemode: c.livemode,
    email: c.email ?? null,
    name: c.name ?? null,
    first_name: c.firstName ?? null,
    last_name: c.lastName ?? null,
    customer_type: c.customerType ?? null,
    company: c.company ?? null,
    segments: c.segments,
    custom_fields: c.customFields,
    metadata: c.metadata,
    created_at: c.createdAt.toISOString(),
    updated_at: c.updatedAt.toISOString(),
  };
}

function displayName(first: string | null, last: string | null): string | null {
  const joined = [first, last].filter(Boolean).join(' ');
  return joined || null;
}

/** Merges a metadata patch: a key set to null or "" is removed (as Stripe does). */
function mergeMap<T>(current: Record<string, T>, patch: Record<string, T | null>): Record<string, T> {
  const next = { ...current };
  for (const [k, v] of Object.entries(patch)) {
    if (v === null || v === '') delete next[k];
    else next[k] = v;
  }
  return next;
}

export async function createCustomer(em: EntityManager, scope: Scope, input: CustomerInput): Promise<CustomerView> {
  const firstName = input.first_name ?? null;
  const lastName = input.last_name ?? null;
  const customer = em.create(Customer, {
    id: newId('customer'),
    ...scopeColumns(scope),
    email: input.email ?? null,
    firstName,
    lastName,
    name: input.name ?? displayName(firstName, lastName),
    customerType: input.customer_type ?? null,
    company: input.company ?? null,
    segments: [...new Set(input.segments ?? [])],
    customFields: input.custom_fields ?? {},
    metadata: mergeMap({}, input.metadata ?? {}),
  });
  await em.flush();
  return customerView(customer);
}

export async function getCustomer(orm: MikroORM, scope: Scope, id: string): Promise<CustomerView> {
  return customerView(await readScopedOr404(orm, scope, Customer, id, 'customer'));
}

/**
 * Applies a partial update and records `customer.updated` (with the previous values of what
 * changed) in the same transaction. The row is locked for the update, so concurrent PATCHes apply
 * one after the other and none is lost.
 */
export async function updateCustomer(
  em: EntityManager, scope: Scope, id: string, patch: CustomerInput, requestId: string,
): Promise<CustomerView> {
  return em.transactional(async (tx) => {
    const customer = await tx.findOne(Customer, { id }, { lockMode: LockMode.PESSIMISTIC_WRITE });
    if (!customer) throw notFound('customer', id);
    const before = customerView(customer);

    if (patch.email !== undefined) customer.email = patch.email;
    if (patch.first_name !== undefined) customer.firstName = patch.first_name;
    if (patch.last_name !== undefined) customer.lastName = patch.last_name;
    if (patch.name !== undefined) customer.name = patch.name;
    else if (patch.first_name !== undefined || patch.last_name !== undefined) {
      customer.name = displayName(customer.firstName ?? null, customer.lastName ?? null);
    }
    if (patch.customer_type !== undefined) customer.customerType = patch.customer_type;
    if (patch.company !== undefined) customer.company = patch.company;
    if (patch.segments !== undefined) customer.segments = [...new Set(patch.segments)];
    if (patch.custom_fields !== undefined) customer.customFields = mergeMap(customer.customFields, patch.custom_fields);
    if (patch.metadata !== undefined) customer.metadata = mergeMap(customer.metadata, patch.metadata);

    const after = customerView({ ...customer, updatedAt: customer.updatedAt } as Customer);
    const previous: Record<string, unknown> = {};
    for (const key of Object.keys(after) as (keyof CustomerView)[]) {
      if (key !== 'updated_at' && JSON.stringify(before[key]) !== JSON.stringify(after[key])) previous[key] = before[key];
    }
    if (Object.keys(previous).length === 0) return before; // nothing changed: no write, no event

    customer.updatedAt = new Date();
    recordEvent(tx, scope, {
      type: 'customer.updated',
      object: { ...customerView(customer) },
      previousAttributes: previous,
      customerId: customer.id,
      requestId,
    });
    await tx.flush();
    return customerView(customer);
  });
}

/** What GET /v3/customers?q= searches (the trigram index of migration 0166 spells the same text). */
const CUSTOMER_SEARCH_COLUMNS = ['email', 'name', 'first_name', 'last_name', "company ->> 'name'"] as const;

export async function listCustomers(
  em: EntityManager, filters: CustomerFilters, page: { where: Record<string, unknown>; direction: 'asc' | 'desc'; limit: number },
): Promise<CustomerView[]> {
  const where: Record<string, unknown>[] = [page.where];
  // The emails come lowercased, and so are stored ones; `lower(email)` is what customers_scope_email indexes.
  if (filters.email) where.push({ [raw((alias) => `lower(${alias}.email)`)]: { $in: filters.email } });
  if (filters.segment) where.push({ segments: { $overlap: filters.segment } });
  if (filters.customer_type) where.push({ customerType: { $in: filters.customer_type } });
  if (filters.created_gte) where.push({ createdAt: { $gte: filters.created_gte } });
  if (filters.created_lte) where.push({ createdAt: { $lte: filters.created_lte } });
  if (filters.q) where.push(textContains(CUSTOMER_SEARCH_COLUMNS, filters.q));
  const rows = await em.find(Customer, { $and: where }, { orderBy: { id: page.direction }, limit: page.limit + 1 });
  return rows.map(customerView);
}

/** 422 for every customer id in `ids` (field path → id) that does not exist in this account and mode. */
export async function checkCustomers(em: EntityManager, ids: [string, string][]): Promise<FieldError[]> {
  if (!ids.length) return [];
  const found = await em.find(Customer, { id: { $in: ids.map(([, id]) => id) } }, { fields: ['id'] });
  const known = new Set(found.map((c) => c.id));
  return ids.filter(([, id]) => !known.has(id)).map(([path, id]) => ({ path, message: `no customer with id '${id}' exists in this account and mode` }));
}

/** Customers by id (those that exist in the em's account and mode), in one query. */
export async function customersByIds(em: EntityManager, ids: readonly string[]): Promise<CustomerView[]> {
  if (!ids.length) return [];
  return (await em.find(Customer, { id: { $in: [...ids] } })).map(customerView);
}
