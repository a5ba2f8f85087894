import { describe, expect, it } from 'vitest';
import { Order, Product, Store } from '../../domain/commerce/entities.ts';
import { Customer } from '../../domain/customers/public.ts';
import { DomainEvent } from '../../domain/events/entities.ts';
import { eventRecord } from '../../domain/events/outbox.ts';
import { insertScoped, readScopedById, readScopedWhere, scopedEm, type Scope } from '../../domain/scope.ts';
import { newId } from '../../platform/ids.ts';
import type { TestPlatform } from '../support/platform.ts';
import { usePlatform } from '../support/use-platform.ts';

// The hot path's reads and writes outside the unit of work (domain/scope.ts): what they read and
// write must be what the ORM would, confined to the scope they are given.
let platform: TestPlatform;
usePlatform({}, (t) => ({ platform } = t));

/** A store and a customer of the scope (what orders and products refer to), written together. */
async function shop(scope: Scope): Promise<{ storeId: string; customerId: string }> {
  const storeId = newId('store');
  const customerId = newId('customer');
  await insertScoped(scopedEm(platform.orm, scope), scope, [
    { entity: Store, data: { id: storeId, name: 'Shop', url: null, defaultCurrency: 'USD', fulfillmentDeadlineSeconds: 60, metadata: {} } },
    { entity: Customer, data: { id: customerId, email: null, firstName: null, lastName: null, name: 'C', customerType: null, company: null, segments: [], customFields: {}, metadata: {} } },
  ]);
  return { storeId, customerId };
}

function orderRow(id: string, { storeId, customerId }: { storeId: string; customerId: string }): Record<string, unknown> {
  return {
    id, storeId, customerId, status: 'processing', paymentStatus: 'unpaid', totalAmount: 2 ** 53 - 1,
    currency: 'USD', lineItems: [{ sku: 'A', quantity: 1, allocations: [] }], shippingAddress: { city: "O'Hare \\ \"quoted\" ?" },
    fulfillmentStatus: 'pending', trackingNumber: null, carrier: null, fulfillmentDeadline: new Date('2030-01-02T03:04:05.678Z'),
    workflowId: `order-${id}`, workflowConfirmedAt: null, paidAt: null, paymentId: null, fulfilledAt: null, canceledAt: null,
    cancellationReason: null, metadata: { ref: '?' }, createdAt: new Date('2026-01-01T00:00:00.000Z'), updatedAt: new Date('2026-01-01T00:00:00.000Z'),
  };
}

describe('insertScoped', () => {
  it('writes several records in one statement, in the given scope, as the ORM reads them back', async () => {
    const scope: Scope = { accountId: await platform.newAccount(), livemode: false };
    const refs = await shop(scope);
    const id = newId('order');
    const em = scopedEm(platform.orm, scope);
    const event = eventRecord({ type: 'order.created', object: { id }, customerId: refs.customerId, requestId: null });
    // A record's own account or mode never wins over the scope's.
    await insertScoped(em, scope, [{ entity: Order, data: { ...orderRow(id, refs), accountId: 'acct_other', livemode: true } }, event]);

    const expected = { ...orderRow(id, refs), accountId: scope.accountId, livemode: false, version: 1 };
    expect(await em.fork().findOneOrFail(Order, { id })).toMatchObject(expected);
    expect(await readScopedById(platform.orm, scope, Order, id)).toEqual(expected);
    const stored = await em.fork().findOneOrFail(DomainEvent, { id: event.data.id as string });
    expect(stored).toMatchObject({ type: 'order.created', data: { object: { id } }, synthetic: false, accountId: scope.accountId });
    expect(Date.now() - stored.createdAt.getTime()).toBeLessThan(60_000); // onCreate's value
  });

  it('writes all or nothing: a refused second insert leaves no first', async () => {
    const scope: Scope = { accountId: await platform.newAccount(), livemode: false };
    const refs = await shop(scope);
    const em = scopedEm(platform.orm, scope);
    const taken = newId('order');
    await insertScoped(em, scope, [{ entity: Order, data: orderRow(taken, refs) }]);
    const fresh = newId('order');
    await expect(insertScoped(em, scope, [{ entity: Order, data: orderRow(fresh, refs) }, { entity: Order, data: orderRow(taken, refs) }]))
      .rejects.toMatchObject({ code: '23505' });
    expect(await readScopedById(platform.orm, scope, Order, fresh)).toBeNull();
  });
});

describe('readScopedWhere', () => {
  it("reads by equal and any-of properties, never another account's or mode's rows", async () => {
    const scope: Scope = { accountId: await platform.newAccount(), livemode: false };
    const other: Scope = { accountId: await platform.newAccount(), livemode: false };
    const [first, second, theirs, liveShop] = [await shop(scope), await shop(scope), await shop(other), await shop({ ...scope, livemode: true })];
    const product = (sku: string, storeId = first.storeId) => ({
      id: newId('product'), storeId, name: sku, description: null, sku, price: 1999, currency: 'USD', prices: { EUR: 1800 },
      categories: ['mugs', 'a,b'], variants: [], trackQuantity: true, unlimited: false, reorderPoint: 0, safetyStock: 0, active: true,
      metadata: {},
    });
    // SKUs are free text: an array parameter's quoting must hold for commas, quotes, braces and backslashes.
    const odd = 'S,"{4}\\ ?';
    const mine = [product('S-1'), product('S-2'), product('S-3'), product('S-1', second.storeId), product(odd)];
    await insertScoped(scopedEm(platform.orm, scope), scope, mine.map((data) => ({ entity: Product, data })));
    await insertScoped(scopedEm(platform.orm, other), other, [{ entity: Product, data: product('S-2', theirs.storeId) }]);
    const live = { ...scope, livemode: true };
    await insertScoped(scopedEm(platform.orm, live), live, [{ entity: Product, data: product('S-2', liveShop.storeId) }]);

    const found = await readScopedWhere(platform.orm, scope, Product, { storeId: first.storeId, sku: ['S-1', 'S-2', 'S-9'] });
    expect(found.map((p) => p.sku).sort()).toEqual(['S-1', 'S-2']);
    expect(found.find((p) => p.sku === 'S-1')).toMatchObject({ ...mine[0], accountId: scope.accountId, livemode: false });
    expect(Object.isFrozen(found[0])).toBe(true);
    expect((await readScopedWhere(platform.orm, scope, Product, { storeId: first.storeId, sku: [odd, 'S-3'] })).map((p) => p.sku).sort()).toEqual(['S-3', odd].sort());
    // Another account's store id, or the same account's other mode, finds nothing from this scope.
    expect(await readScopedWhere(platform.orm, scope, Product, { storeId: theirs.storeId, sku: ['S-2'] })).toEqual([]);
    expect(await readScopedWhere(platform.orm, scope, Product, { storeId: liveShop.storeId, sku: ['S-2'] })).toEqual([]);
    expect(await readScopedWhere(platform.orm, other, Product, { storeId: first.storeId, sku: ['S-1'] })).toEqual([]);
  });
});
