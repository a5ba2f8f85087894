import { afterAll, describe, expect, it } from 'vitest';
import { create } from '../commerce/support.ts';
import type { TestPlatform } from '../support/platform.ts';
import { usePlatform, type Http } from '../support/use-platform.ts';
import { workerProcesses } from '../support/worker-processes.ts';

let platform: TestPlatform;
let http: Http;
let buyer: string;
let accountId: string;
// The workers poll the ERP queue only: all a purchase order needs.
const workers = workerProcesses(() => platform, { WORKER_AREAS: 'erp' });

// No in-process worker: the workers are child processes this file can kill.
usePlatform({ ownAccount: true }, (t) => ({ platform, http, key: buyer, accountId } = t));
afterAll(() => workers.killAll());

describe('a worker killed mid-approval', () => {
  it('loses nothing: the approval sent while no worker runs lands once the replacement polls, and everything happens once', async () => {
    const first = await workers.start();
    const replacement = workers.standby();
    const approverB = await platform.newKey({ accountId });
    const approverC = await platform.newKey({ accountId });
    const vendor = (await create(http, buyer, '/v3/vendors', { name: 'Acme', email: 'orders@acme.test' })).id;
    const created = await http('/v3/procurement/orders', {
      key: buyer, body: { vendor_id: vendor, items: [{ description: 'Forklift', quantity: 1, unit_price: 25_000, currency: 'USD' }] },
    });
    expect(created.status, created.text).toBe(201);
    const id = created.body.id;
    const level1 = await http(`/v3/procurement/orders/${id}/approve`, { key: approverB, body: {} });
    expect(level1.status, level1.text).toBe(200);

    // The worker dies; the second approval is sent while nobody polls, and waits.
    await workers.kill(first);
    const level2 = http(`/v3/procurement/orders/${id}/approve`, { key: approverC, body: { note: 'during the outage' } });
    await new Promise((r) => setTimeout(r, 300)); // the update is in Temporal before the replacement starts
    await replacement.start();
    const approved = await level2;
    expect(approved.status, approved.text).toBe(200);
    expect(approved.body.status).toBe('approved');
    expect(approved.body.approval.steps.map((s: any) => s.approved_by !== null)).toEqual([true, true]);

    const deadline = Date.now() + 30_000;
    let order = approved.body;
    while (order.status !== 'ordered' && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 150));
      order = (await http(`/v3/procurement/orders/${id}`, { key: buyer })).body;
    }
    expect(order.status).toBe('ordered');
    const events = await platform.sql<{ type: string; n: number }>(
      `select type, count(*)::int as n from events where data->'object'->>'id' = $1 group by type order by type`, [id]);
    expect(events).toEqual([{ type: 'procurement.order.approved', n: 1 }, { type: 'procurement.order.created', n: 1 }]);
    const vendorCalls = await platform.sql<{ n: number }>('select count(*)::int as n from sandbox_vendor_orders where purchase_order_id = $1', [id]);
    expect(vendorCalls[0]!.n).toBe(1);
  }, 120_000); // two worker processes start on a machine shared with other test files
});
