import { describe, expect, it } from 'vitest';
import { adminRouter } from '../../api/admin/router.ts';
import { hashKey } from '../../domain/accounts/keys.ts';
import { createCallerFactory, createContextInner } from '../../api/admin/trpc.ts';
import { permissionScopes } from '../../domain/registry.ts';
import { create, eventually, openShop, stockedProduct, stockOf, type Shop } from '../commerce/support.ts';
import type { TestPlatform } from '../support/platform.ts';
import { usePlatform, type Http } from '../support/use-platform.ts';

let platform: TestPlatform;
let http: Http;
/** The buyer: creates the orders. */
let buyer: string;
/** Approvers: standard keys of the same account (they hold every permission). */
let approverB: string;
let approverC: string;
let accountId: string;
let shop: Shop;

usePlatform({
  worker: true, ownAccount: true,
  env: { RATE_LIMIT_PER_MINUTE: '100000', RATE_LIMIT_PER_DAY: '1000000', RATE_LIMIT_CONCURRENCY: '100' },
}, async (t) => {
  ({ platform, http, accountId } = t);
  buyer = t.key;
  approverB = await platform.newKey({ accountId });
  approverC = await platform.newKey({ accountId });
  shop = await openShop(http, buyer);
});

const restricted = (permissions: string[]) => platform.newKey({ accountId, type: 'restricted', mode: 'test', permissions });
const keyId = async (key: string) => (await platform.sql<{ id: string }>('select id from api_keys where key_hash = $1', [hashKey(key)]))[0]!.id;

async function vendor(email = 'orders@acme.test'): Promise<string> {
  return (await create(http, buyer, '/v3/vendors', { name: 'Acme Supplies', email })).id;
}

async function order(body: Record<string, unknown>, key = buyer): Promise<any> {
  const res = await http('/v3/procurement/orders', { key, body });
  expect(res.status, res.text).toBe(201);
  return res.body;
}

const items = (unitPrice: number, quantity = 1) => [{ description: 'Office chairs', quantity, unit_price: unitPrice, currency: 'USD' }];
const get = async (id: string) => (await http(`/v3/procurement/orders/${id}`, { key: buyer })).body;
const action = (id: string, what: string, key: string, body: Record<string, unknown> = {}) =>
  http(`/v3/procurement/orders/${id}/${what}`, { key, body });
const eventCount = async (type: string, id: string) => (await platform.sql<{ n: number }>(
  `select count(*)::int as n from events where type = $1 and data->'object'->>'id' = $2`, [type, id]))[0]!.n;

describe('approval tiers', () => {
  it('under 1,000 needs none: approved, sent to the vendor and acknowledged', async () => {
    const o = await order({ vendor_id: await vendor(), items: items(499.99) });
    expect(o).toMatchObject({ object: 'procurement_order', status: 'approved', total: 499.99, workflow_id: `procurement-order-${o.id}`, approval: { steps: [] } });
    const ordered = await eventually(async () => { const x = await get(o.id); return x.status === 'ordered' && x; }, 20_000, 'ordered');
    expect(ordered.vendor_reference).toMatch(/^SVO-[0-9A-F]{12}$/);
    expect(await eventCount('procurement.order.created', o.id)).toBe(1);
    expect(await eventCount('procurement.order.approved', o.id)).toBe(1);
    // approval_required forces one approval whatever the amount.
    const forced = await order({ vendor_id: await vendor(), items: items(10), approval_required: true });
    expect(forced.status).toBe('pending_approval');
    expect(forced.approval.steps.map((s: any) => s.role)).toEqual(['procurement']);
  });

  it('1,000 to 10,000: one approver with procurement:write, never the creator', async () => {
    const o = await order({ vendor_id: await vendor(), items: items(2500, 2) });
    expect(o).toMatchObject({ status: 'pending_approval', total: 5000, approval: { steps: [{ level: 1, role: 'procurement', permission: 'procurement:write', approved_by: null }] } });
    expect(o.next_escalation_at).not.toBeNull();
    const self = await action(o.id, 'approve', buyer);
    expect(self.status, self.text).toBe(403);
    expect(self.body.code).toBe('self_approval_forbidden');
    const readOnly = await action(o.id, 'approve', await restricted(['erp:read']));
    expect(readOnly.status).toBe(403);
    expect(readOnly.body).toMatchObject({ code: 'permission_denied', required_permission: 'procurement:write' });
    const financeOnly = await action(o.id, 'approve', await restricted(['erp:read', 'finance:write']));
    expect(financeOnly.status).toBe(403);
    const approver = await restricted(['erp:read', 'procurement:write']);
    const ok = await action(o.id, 'approve', approver, { note: 'Budgeted in Q1' });
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body.status).toBe('approved');
    expect(ok.body.approval.steps[0]).toMatchObject({ approved_by: await keyId(approver), note: 'Budgeted in Q1' });
    const again = await action(o.id, 'approve', approverB);
    expect(again.status).toBe(409);
    expect(again.body.code).toBe('invalid_state_transition');
    await eventually(async () => (await get(o.id)).status === 'ordered', 20_000, 'ordered');
  });

  it('over 10,000: a second approver with finance:write; nobody approves twice', async () => {
    const o = await order({ vendor_id: await vendor(), items: items(12_000) });
    expect(o.approval.steps.map((s: any) => [s.level, s.role, s.permission])).toEqual([[1, 'procurement', 'procurement:write'], [2, 'finance', 'finance:write']]);
    const first = await http(`/v3/procurement/orders/${o.id}/approve`, { key: approverB, body: {}, headers: { 'idempotency-key': `approve-${o.id}` } });
    expect(first.status, first.text).toBe(200);
    expect(first.body.status).toBe('pending_approval');
    await platform.sql('delete from idempotency_records');
    const lost = await http(`/v3/procurement/orders/${o.id}/approve`, { key: approverB, body: {}, headers: { 'idempotency-key': `approve-${o.id}` } });
    expect(lost.status, lost.text).toBe(200); // the same request again: its approval, not already_approved
    expect(lost.body.approval.steps[0].approved_by).toBe(first.body.approval.steps[0].approved_by);
    const twice = await action(o.id, 'approve', approverB);
    expect(twice.status).toBe(409);
    expect(twice.body.code).toBe('already_approved');
    const procurementOnly = await action(o.id, 'approve', await restricted(['erp:read', 'procurement:write']));
    expect(procurementOnly.body).toMatchObject({ code: 'permission_denied', required_permission: 'finance:write' });
    const finance = await action(o.id, 'approve', await restricted(['erp:read', 'finance:write']));
    expect(finance.status, finance.text).toBe(200);
    expect(finance.body.status).toBe('approved');
    expect(await eventCount('procurement.order.approved', o.id)).toBe(1);
  });

  it('a draft keeps its items editable and asks for no approval until it is submitted', async () => {
    const d = await order({ vendor_id: await vendor(), items: items(500), submit: false });
    expect(d).toMatchObject({ status: 'draft', approval: { steps: [] } });
    expect((await action(d.id, 'approve', approverB)).body).toMatchObject({ code: 'invalid_state_transition', current_state: 'draft' });
    const edited = await http(`/v3/procurement/orders/${d.id}`, { key: buyer, method: 'PATCH', body: { items: items(4000) } });
    expect(edited.body).toMatchObject({ status: 'draft', total: 4000, approval: { steps: [expect.objectContaining({ role: 'procurement' })] } });
    const submitted = await action(d.id, 'submit', buyer);
    expect(submitted.status, submitted.text).toBe(200);
    expect(submitted.body.status).toBe('pending_approval');
    expect((await action(d.id, 'submit', buyer)).body).toMatchObject({ code: 'invalid_state_transition', current_state: 'pending_approval' });
  });

  it('editing the items resets approvals and recomputes the tier; rejection and cancellation are final', async () => {
    const o = await order({ vendor_id: await vendor(), items: items(12_000) });
    expect((await action(o.id, 'approve', approverB)).body.approval.steps[0].approved_by).not.toBeNull();
    const edited = await http(`/v3/procurement/orders/${o.id}`, { key: buyer, method: 'PATCH', body: { items: items(3000) } });
    expect(edited.status, edited.text).toBe(200);
    expect(edited.body).toMatchObject({ status: 'pending_approval', total: 3000 });
    expect(edited.body.approval.steps).toEqual([expect.objectContaining({ level: 1, role: 'procurement', approved_by: null })]);
    const badEdit = await http(`/v3/procurement/orders/${o.id}`, { key: buyer, method: 'PATCH', body: { items: [{ description: 'x', quantity: 1, unit_price: 1.001, currency: 'USD' }] } });
    expect(badEdit.status).toBe(422);
    expect(badEdit.body.errors[0].path).toBe('items.0.unit_price');
    const rejected = await action(o.id, 'reject', approverC, { reason: 'Not this quarter' });
    expect(rejected.status, rejected.text).toBe(200);
    expect(rejected.body).toMatchObject({ status: 'rejected', approval: { rejection: { reason: 'Not this quarter' } } });
    expect((await action(o.id, 'approve', approverB)).body).toMatchObject({ code: 'invalid_state_transition', current_state: 'rejected' });
    expect(await eventCount('procurement.order.rejected', o.id)).toBe(1);

    const p = await order({ vendor_id: await vendor(), items: items(5000) });
    const once = { 'idempotency-key': `cancel-${p.id}` };
    const cancelled = await http(`/v3/procurement/orders/${p.id}/cancel`, { key: buyer, body: { reason: 'Found it cheaper' }, headers: once });
    expect(cancelled.body).toMatchObject({ status: 'cancelled', cancellation_reason: 'Found it cheaper' });
    expect((await action(p.id, 'cancel', buyer)).status).toBe(409);
    // The answer was lost and the stored response is gone (a crash before it was kept): the retry
    // with the same key still answers the cancelled order, not 409.
    await platform.sql('delete from idempotency_records');
    const retried = await http(`/v3/procurement/orders/${p.id}/cancel`, { key: buyer, body: { reason: 'Found it cheaper' }, headers: once });
    expect(retried.status, retried.text).toBe(200);
    expect(retried.body.status).toBe('cancelled');
    expect(await eventCount('procurement.order.cancelled', p.id)).toBe(1);
  });

  it('refuses bad orders with 422 naming every field', async () => {
    const res = await http('/v3/procurement/orders', {
      key: buyer, body: {
        vendor_id: 'ven_missing', items: [
          { sku: 'X', quantity: 1, unit_price: 1, currency: 'USD' },
          { description: 'y', quantity: 1, unit_price: 1.234, currency: 'USD' },
          { description: 'z', quantity: 1, unit_price: 1, currency: 'EUR' },
          { quantity: 1, unit_price: 1, currency: 'USD' },
        ],
      },
    });
    expect(res.status, res.text).toBe(422);
    expect(res.body.errors.map((e: any) => e.path).sort()).toEqual(['items.0.sku', 'items.1.unit_price', 'items.2.currency', 'items.3', 'vendor_id', 'warehouse_id'].sort());
    const elsewhere = await http('/v3/procurement/orders', {
      key: buyer, body: { vendor_id: await vendor(), warehouse_id: 'wh_someone_elses', items: [{ description: 'x', quantity: 1, unit_price: 1, currency: 'USD' }] },
    });
    expect(elsewhere.status).toBe(422);
    expect(elsewhere.body.errors.map((e: any) => e.path)).toEqual(['warehouse_id']);
    const zero = await http('/v3/procurement/orders', { key: buyer, body: { vendor_id: 'v', items: [] } });
    expect(zero.status).toBe(422);
    const huge = await http('/v3/procurement/orders', { key: buyer, body: { vendor_id: await vendor(), items: [{ description: 'x', quantity: 1e12, unit_price: 1, currency: 'USD' }] } });
    expect(huge.status).toBe(422);
    expect(huge.body.errors[0].path).toBe('items.0.quantity');
    const live = await platform.newKey({ accountId, mode: 'live', type: 'live' });
    const liveVendor = (await create(http, live, '/v3/vendors', { name: 'Live vendor' })).id;
    const liveClock = await http('/v3/procurement/orders', { key: live, body: { vendor_id: liveVendor, items: items(10), test_clock_time: '2025-01-01T00:00:00Z' } });
    expect(liveClock.status).toBe(403);
    expect(liveClock.body.code).toBe('test_mode_only');
  });
});

describe('escalation on a test clock', () => {
  it('reminds the approver every escalation period, then expires the order', async () => {
    const settings = await http('/v3/erp/settings', { key: buyer, method: 'PATCH', body: { escalation_hours: 48, escalation_limit: 2 } });
    expect(settings.status, settings.text).toBe(200);
    const o = await order({ vendor_id: await vendor(), items: items(5000), test_clock_time: '2025-01-01T00:00:00Z' });
    expect(o).toMatchObject({ status: 'pending_approval', next_escalation_at: '2025-01-03T00:00:00.000Z', test_clock_time: '2025-01-01T00:00:00.000Z' });
    const advance = (to: string) => http(`/v3/procurement/orders/${o.id}/test_clock/advance`, { key: buyer, body: { frozen_time: to } });
    const quiet = await advance('2025-01-02T23:59:59Z');
    expect(quiet.status, quiet.text).toBe(200);
    expect(quiet.body).toMatchObject({ escalation_count: 0, status: 'pending_approval' });
    const first = await advance('2025-01-03T00:00:00Z');
    expect(first.body).toMatchObject({ escalation_count: 1, next_escalation_at: '2025-01-05T00:00:00.000Z' });
    expect(first.body.approval.reminders).toEqual([{ level: 1, role: 'procurement', assignee: null, at: '2025-01-03T00:00:00.000Z', escalation: 1 }]);
    expect(await eventCount('procurement.approval.escalated', o.id)).toBe(1);
    expect((await advance('2025-01-01T00:00:00Z')).status).toBe(422);
    // Two more periods in one advance: the second escalation, then expiry.
    const expired = await advance('2025-01-08T00:00:00Z');
    expect(expired.body).toMatchObject({ status: 'cancelled', cancellation_reason: 'approval_expired', escalation_count: 3 });
    expect(await eventCount('procurement.approval.escalated', o.id)).toBe(2);
    expect(expired.body.approval.reminders.map((r: any) => [r.escalation, r.at])).toEqual([[1, '2025-01-03T00:00:00.000Z'], [2, '2025-01-05T00:00:00.000Z']]);
    expect(await eventCount('procurement.order.cancelled', o.id)).toBe(1);
    expect((await action(o.id, 'approve', approverB)).status).toBe(409);

    // An order on real time has no clock to advance.
    const real = await order({ vendor_id: await vendor(), items: items(5000) });
    const noClock = await http(`/v3/procurement/orders/${real.id}/test_clock/advance`, { key: buyer, body: { frozen_time: '2030-01-01T00:00:00Z' } });
    expect(noClock.status).toBe(409);
    expect(noClock.body.code).toBe('no_test_clock');
    await http('/v3/erp/settings', { key: buyer, method: 'PATCH', body: { escalation_limit: 3 } });
  });
});

describe('vendor, receipts and the bill', () => {
  it('receives into stock, posts inventory and payable, and closes on a matched bill', async () => {
    await stockedProduct(http, buyer, shop, 'PO-SKU', 5);
    const o = await order({
      vendor_id: await vendor(), warehouse_id: shop.warehouseId,
      items: [{ sku: 'PO-SKU', quantity: 10, unit_price: 4.2, currency: 'USD' }, { description: 'Installation', quantity: 1, unit_price: 100, currency: 'USD' }],
    });
    await eventually(async () => (await get(o.id)).status === 'ordered', 20_000, 'ordered');
    const early = await action(o.id, 'bill', buyer, { invoice_number: 'INV-1', amount: 142 });
    expect(early.body).toMatchObject({ code: 'invalid_state_transition', current_state: 'ordered' });

    const part = await action(o.id, 'receive', buyer, { lines: [{ line: 1, quantity: 4 }] });
    expect(part.status, part.text).toBe(200);
    expect(part.body).toMatchObject({ status: 'partially_received', items: [{ line: 1, received: 4 }, { line: 2, received: 0 }] });
    expect((await stockOf(platform, buyer, 'PO-SKU')).quantity).toBe(9);
    const receiptTxn = await http(`/v3/financial/transactions/${part.body.receipts[0].transaction_id}`, { key: buyer });
    expect(receiptTxn.body.journal_lines.map((l: any) => [l.account_code, l.debit, l.credit])).toEqual([['1300', 16.8, 0], ['2100', 0, 16.8]]);

    const over = await action(o.id, 'receive', buyer, { lines: [{ line: 1, quantity: 7 }] });
    expect(over.status).toBe(422);
    expect(over.body.errors[0]).toMatchObject({ path: 'lines.0.quantity' });
    const rest = await action(o.id, 'receive', buyer);
    expect(rest.status, rest.text).toBe(200);
    expect(rest.body.status).toBe('received');
    expect((await stockOf(platform, buyer, 'PO-SKU')).quantity).toBe(15);
    expect(await eventCount('procurement.order.received', o.id)).toBe(2);

    const mismatch = await action(o.id, 'bill', buyer, { invoice_number: 'INV-1', amount: 150 });
    expect(mismatch.status, mismatch.text).toBe(422);
    expect(mismatch.body).toMatchObject({ code: 'three_way_match_failed', received_value: 14200, tolerance: 284 });
    const bill = await action(o.id, 'bill', buyer, { invoice_number: 'INV-1', amount: 143 });
    expect(bill.status, bill.text).toBe(200);
    expect(bill.body).toMatchObject({ status: 'closed', bill: { invoice_number: 'INV-1', amount: 14300, received_value: 14200, variance: 100 } });
    const billTxn = await http(`/v3/financial/transactions/${bill.body.bill.transaction_id}`, { key: buyer });
    expect(billTxn.body.journal_lines.map((l: any) => [l.account_code, l.debit, l.credit])).toEqual([['2100', 142, 0], ['5100', 1, 0], ['2000', 0, 143]]);
    const tb = await http('/v3/financial/reports/trial-balance', { key: buyer });
    expect(tb.body.balanced).toBe(true);
    expect(tb.body.accounts.find((a: any) => a.code === '2100').balance).toBe(0);
    expect((await action(o.id, 'receive', buyer)).status).toBe(409);
  });

  it('a vendor that refuses cancels the order; one that is briefly down gets it once', async () => {
    const refused = await order({ vendor_id: await vendor('po+reject@vendor.test'), items: items(20) });
    const cancelled = await eventually(async () => { const x = await get(refused.id); return x.status === 'cancelled' && x; }, 20_000, 'cancelled');
    expect(cancelled.cancellation_reason).toBe('vendor_rejected');
    const flaky = await order({ vendor_id: await vendor('po+unavailable@vendor.test'), items: items(20) });
    const ordered = await eventually(async () => { const x = await get(flaky.id); return x.status === 'ordered' && x; }, 30_000, 'ordered');
    expect(ordered.vendor_reference).toMatch(/^SVO-/);
    const calls = await platform.sql<{ attempts: number; status: string }>('select attempts, status from sandbox_vendor_orders where purchase_order_id = $1', [flaky.id]);
    expect(calls).toEqual([{ attempts: 3, status: 'acknowledged' }]);
  });
});

describe('operations (admin tRPC)', () => {
  it('finds an order by search attribute, reads its live state and steers it, recording operator and reason', async () => {
    const caller = createCallerFactory(adminRouter)(createContextInner({
      orm: platform.orm, temporal: platform.temporal, permissionScopes, adminToken: 'test-admin-token-0123456789', presentedToken: 'test-admin-token-0123456789',
    }));
    const o = await order({ vendor_id: await vendor(), items: items(2000) });
    const ref = { accountId, livemode: false, orderId: o.id };
    const described = await caller.erp.describeOrder(ref);
    expect(described.live).toMatchObject({ waitingFor: 'approval level 1 (procurement)', state: { status: 'pending_approval' } });
    expect(described.workflow).toMatchObject({ workflow_id: `procurement-order-${o.id}`, status: 'RUNNING' });
    const found = await eventually(async () => {
      const r = await caller.erp.findOrders({ accountId, livemode: false, orderId: o.id });
      return r.length === 1 && r;
    }, 20_000, 'visibility');
    expect(found[0]).toMatchObject({ workflow_id: `procurement-order-${o.id}`, order_id: o.id });

    const escalated = await caller.erp.escalateOrder({ ...ref, operator: 'ops@example.com', reason: 'Supplier deadline tomorrow' });
    expect(escalated.escalation_count).toBe(1);
    const assignee = await keyId(approverC);
    await caller.erp.reassignApprover({ ...ref, level: 1, assignee, operator: 'ops@example.com', reason: 'B is on leave' });
    const notAssigned = await action(o.id, 'approve', approverB);
    expect(notAssigned.status).toBe(403);
    expect(notAssigned.body.code).toBe('approver_not_assigned');
    expect((await action(o.id, 'approve', approverC)).body.status).toBe('approved');
    await expect(caller.erp.escalateOrder({ ...ref, operator: 'ops@example.com', reason: 'late' })).rejects.toMatchObject({ code: 'CONFLICT' });
    await expect(caller.erp.escalateOrder({ ...ref, operator: '', reason: 'no operator' })).rejects.toMatchObject({ code: 'BAD_REQUEST' });

    const other = await order({ vendor_id: await vendor(), items: items(2000) });
    const byOps = await caller.erp.cancelOrder({ accountId, livemode: false, orderId: other.id, operator: 'ops@example.com', reason: 'Duplicate order' });
    expect(byOps).toMatchObject({ status: 'cancelled', cancellation_reason: 'operator: Duplicate order' });
    const log = (await caller.erp.describeOrder(ref)).actions.map((a) => [a.action, a.operator, a.reason]);
    expect(log).toEqual([['escalate', 'ops@example.com', 'Supplier deadline tomorrow'], ['reassign_approver', 'ops@example.com', 'B is on leave']]);
  });
});
