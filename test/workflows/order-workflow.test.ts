import { Client, Connection, WithStartWorkflowOperation, WorkflowUpdateFailedError } from '@temporalio/client';
import type { ApplicationFailure } from '@temporalio/common';
import { NativeConnection, Worker } from '@temporalio/worker';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { CommerceActivities } from '../../activities/commerce/index.ts';
import type { OrderView } from '../../domain/commerce/orders.ts';
import { REFUSALS, refuse } from '../../workflows/kit/failures.ts';
import {
  cancelOrderUpdate, fulfillOrderUpdate, orderCreatedUpdate, orderStateQuery, type OrderWorkflowInput,
} from '../../workflows/commerce/shared.ts';

/**
 * The order workflow's logic on the real dev server with stubbed activities: no database, no API,
 * and time driven by the input (a fulfilment deadline already past) instead of waiting.
 */
const taskQueue = `order-workflow-${randomBytes(4).toString('hex')}`;
const calls: { name: string; args: unknown[] }[] = [];
let refuseCreate = false;
/** Orders whose createOrder finds them canceled already. */
const settled = new Set<string>();
let connection: Connection;
let client: Client;
let worker: Worker;
let running: Promise<void>;

const stub = <R>(name: string, result: (args: unknown[]) => R) => async (...args: unknown[]) => {
  calls.push({ name, args });
  return result(args);
};
const activities: Partial<CommerceActivities> = {
  createOrder: stub('createOrder', ([draft]) => {
    if (refuseCreate) throw refuse(REFUSALS.insufficientStock, 'only 1 left of MUG', { sku: 'MUG', requested: 2, available: 1 });
    const { orderId } = draft as OrderWorkflowInput;
    if (settled.has(orderId)) return { id: orderId, status: 'canceled', fulfillment: { status: 'canceled' } } as OrderView;
    return { id: orderId, status: 'processing' } as OrderView;
  }),
  fulfillOrder: stub('fulfillOrder', () => ({ status: 'fulfilled' as const, fulfillment: 'fulfilled' as const })),
  cancelOrder: stub('cancelOrder', () => ({ status: 'canceled' as const, fulfillment: 'canceled' as const })),
  markFulfillmentDelayed: stub('markFulfillmentDelayed', () => ({ status: 'processing' as const, fulfillment: 'delayed' as const })),
};

beforeAll(async () => {
  const address = inject('temporalAddress');
  worker = await Worker.create({
    connection: await NativeConnection.connect({ address }), taskQueue, activities,
    workflowBundle: { codePath: inject('bundlePath') },
  });
  running = worker.run();
  connection = await Connection.connect({ address });
  client = new Client({ connection });
});
afterAll(async () => {
  worker?.shutdown();
  await running;
  await connection?.close();
});

function input(orderId: string, deadline: Date): OrderWorkflowInput {
  return {
    orderId, accountId: 'acct_test', livemode: false, storeId: 'store_1', customerId: 'cus_1', currency: 'USD',
    lines: [], trackedSkus: [], total: 0, shippingAddress: {}, paymentStatus: 'unpaid', paymentId: null, metadata: {},
    placedAt: new Date().toISOString(), fulfillmentDeadline: deadline.toISOString(),
  } as unknown as OrderWorkflowInput;
}

/** As the API starts an order: the workflow and its `orderCreated` update in one call (update-with-start). */
async function start(deadline: Date) {
  const orderId = `ord_${randomBytes(6).toString('hex')}`;
  const operation = new WithStartWorkflowOperation('orderWorkflow', {
    taskQueue, workflowId: `order-${orderId}`, args: [input(orderId, deadline)], workflowIdConflictPolicy: 'USE_EXISTING',
  });
  const created = client.workflow.executeUpdateWithStart(orderCreatedUpdate, { startWorkflowOperation: operation });
  return { orderId, created, handle: () => operation.workflowHandle() };
}

async function place(deadline: Date) {
  const { orderId, created, handle } = await start(deadline);
  return { orderId, created: await created, handle: await handle() };
}
const callsFor = (orderId: string, name: string) =>
  calls.filter((c) => c.name === name && (c.args[0] as { orderId: string }).orderId === orderId);

describe('order workflow (stubbed activities)', () => {
  it('a refused creation fails the create update and the workflow, and runs nothing else', async () => {
    refuseCreate = true;
    try {
      const { orderId, created, handle: started } = await start(new Date(Date.now() + 86_400_000));
      const err = await created.catch((e: unknown) => e);
      const handle = await started();
      expect(err).toBeInstanceOf(WorkflowUpdateFailedError);
      const failure = (err as WorkflowUpdateFailedError).cause as ApplicationFailure;
      expect(failure.type).toBe('insufficient_stock');
      expect(failure.nonRetryable).toBe(true);
      await expect(handle.result()).rejects.toThrow();
      expect(callsFor(orderId, 'createOrder')).toHaveLength(1); // not retried
      expect(calls.filter((c) => c.name !== 'createOrder' && (c.args[0] as { orderId: string }).orderId === orderId)).toEqual([]);
    } finally {
      refuseCreate = false;
    }
  });

  it('ends at once when its order is settled already (a start that came again), and runs nothing else', async () => {
    const orderId = `ord_${randomBytes(6).toString('hex')}`;
    settled.add(orderId);
    const handle = await client.workflow.start('orderWorkflow', {
      taskQueue, workflowId: `order-${orderId}`, args: [{ ...input(orderId, new Date(Date.now() - 1000)), written: true }],
    });
    expect(await handle.result()).toMatchObject({ status: 'canceled', fulfillment: 'canceled' });
    expect(calls.filter((c) => (c.args[0] as { orderId: string }).orderId === orderId).map((c) => c.name)).toEqual(['createOrder']);
  });

  it('marks an order whose deadline has passed delayed once, then fulfils it once and remembers the key that did', async () => {
    const { orderId, handle, created } = await place(new Date(Date.now() - 1000));
    expect(created.id).toBe(orderId);
    // The deadline is already past: the delay is recorded without any wait (the workflow's state
    // changes once the activity's result is back, so poll the state, not the stub's calls).
    let state = await handle.query(orderStateQuery);
    for (let i = 0; i < 200 && state.fulfillment !== 'delayed'; i++) {
      await new Promise((r) => setTimeout(r, 50));
      state = await handle.query(orderStateQuery);
    }
    expect(state).toMatchObject({ status: 'processing', fulfillment: 'delayed' });
    expect(callsFor(orderId, 'markFulfillmentDelayed')).toHaveLength(1);

    const args = { trackingNumber: '1Z', carrier: 'ups', requestId: 'req_1', idempotencyKey: 'key-1' };
    expect(await handle.executeUpdate(fulfillOrderUpdate, { args: [args] })).toMatchObject({ status: 'fulfilled', appliedKeys: { fulfill: 'key-1' } });
    expect(await handle.result()).toMatchObject({ status: 'fulfilled', fulfillment: 'fulfilled' });
    expect(callsFor(orderId, 'fulfillOrder')).toHaveLength(1);
    // The finished workflow still tells which key applied the transition (what the API checks before a 409).
    expect(await handle.query(orderStateQuery)).toMatchObject({ appliedKeys: { fulfill: 'key-1' } });
  });

  it('cancels an open order once, however often the same key asks while it runs', async () => {
    const { orderId, handle } = await place(new Date(Date.now() + 86_400_000));
    const args = { reason: 'customer request', requestId: 'req_3', idempotencyKey: 'key-3' };
    const answers = await Promise.allSettled([
      handle.executeUpdate(cancelOrderUpdate, { args: [args] }),
      handle.executeUpdate(cancelOrderUpdate, { args: [args] }),
    ]);
    const ok = answers.filter((a) => a.status === 'fulfilled');
    expect(ok.length).toBeGreaterThanOrEqual(1);
    for (const a of answers) {
      if (a.status === 'rejected') expect(((a.reason as WorkflowUpdateFailedError).cause as ApplicationFailure).type).toBe('invalid_state_transition');
    }
    expect(await handle.result()).toMatchObject({ status: 'canceled' });
    expect(callsFor(orderId, 'cancelOrder')).toHaveLength(1);
    expect(callsFor(orderId, 'markFulfillmentDelayed')).toHaveLength(0);
  });
});
