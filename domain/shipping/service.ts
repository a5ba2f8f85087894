import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { notFound } from '../../platform/errors.ts';
import { recordEvent } from '../events/outbox.ts';
import { findOrder, orderView } from '../commerce/public.ts';
import { findNewestPerParent, readScopedOr404, scopeColumns, type Scope } from '../scope.ts';
import type { CarrierScan, ShipmentStatus } from './carriers/types.ts';
import { Shipment, type ShippingPickup, type ShippingTestClock } from './entities.ts';
import type { PickupView, ShipmentTrackingView, ShipmentView, ShippingTestClockView } from './schemas.ts';
import type { ShipmentLabelInfo, ShipmentWorkflowInput } from '../../workflows/shipping/shared.ts';
import type { RateQuote } from './carriers/types.ts';

/**
 * Shipment records: written only by the shipment workflow's activities, read by the API. Every
 * status change and its event are one transaction; scans and ETA slips are inserted with
 * `on conflict do nothing`, so a repeated activity or a repeated carrier event changes nothing.
 */

const iso = (d: Date | null | undefined) => (d ? d.toISOString() : null);

export function shipmentView(s: Shipment): ShipmentView {
  return {
    id: s.id, object: 'shipment', livemode: s.livemode, order_id: s.orderId, customer_id: s.customerId ?? null, status: s.status,
    carrier: s.carrier, service_level: s.serviceLevel, tracking_number: s.trackingNumber, label_url: s.labelUrl,
    rate: { amount: s.rateAmount, currency: s.rateCurrency, estimated_days: s.rateEstimatedDays },
    estimated_delivery: iso(s.estimatedDelivery), original_estimated_delivery: s.originalEstimatedDelivery.toISOString(),
    origin: s.origin, destination: s.destination,
    packages: s.packages.map((p) => ({ weight: p.weight, dimensions: p.dimensions ?? null, value: p.value ?? null })),
    pickup_id: s.pickupId ?? null, test_clock: s.testClockId ?? null, workflow_id: s.workflowId, metadata: s.metadata,
    created_at: s.createdAt.toISOString(), updated_at: s.updatedAt.toISOString(), delivered_at: iso(s.deliveredAt), cancelled_at: iso(s.cancelledAt),
  };
}

export function pickupView(p: ShippingPickup): PickupView {
  return {
    id: p.id, object: 'pickup', livemode: p.livemode, status: p.status, carrier: p.carrier, confirmation_number: p.confirmationNumber,
    pickup_date: p.pickupDate, time_window: { start: p.windowStart, end: p.windowEnd }, special_instructions: p.specialInstructions ?? null,
    contact: p.contact, address: p.address, shipment_ids: p.shipmentIds, created_at: p.createdAt.toISOString(), cancelled_at: iso(p.cancelledAt),
  };
}

export function clockView(c: ShippingTestClock): ShippingTestClockView {
  return { id: c.id, object: 'shipping_test_clock', livemode: false, name: c.name ?? null, frozen_time: c.frozenTime.toISOString(), status: c.status, created_at: c.createdAt.toISOString() };
}

export async function findShipment(em: EntityManager, id: string): Promise<Shipment> {
  const s = await em.findOne(Shipment, { id });
  if (!s) throw notFound('shipment', id);
  return s;
}

export async function getShipment(em: EntityManager, id: string): Promise<ShipmentView> {
  return shipmentView(await findShipment(em, id));
}

/** Shipment by id for GET /v3/shipping/{id}: one prepared statement, no EntityManager (readScopedOr404). */
export async function readShipment(orm: MikroORM, scope: Scope, id: string): Promise<ShipmentView> {
  return shipmentView(await readScopedOr404(orm, scope, Shipment, id, 'shipment'));
}

export async function findShipmentByRequestKey(em: EntityManager, key: string): Promise<ShipmentView | null> {
  const s = await em.findOne(Shipment, { requestIdempotencyKey: key });
  return s ? shipmentView(s) : null;
}

/** The spec's tracking document: the row's status and ETA, and every scan sorted by its time. */
export async function getTracking(em: EntityManager, id: string): Promise<ShipmentTrackingView> {
  const s = await findShipment(em, id);
  const rows = await em.getConnection().execute<{ status: ShipmentStatus; occurred_at: Date; location: string; description: string }[]>(
    `select status, occurred_at, location, description from shipping_tracking_events
      where shipment_id = ? and account_id = ? and livemode = ? order by occurred_at, carrier_event_id`, [s.id, s.accountId, s.livemode]);
  return {
    object: 'shipment_tracking', shipment_id: s.id, tracking_number: s.trackingNumber, status: s.status, carrier: s.carrier,
    estimated_delivery: iso(s.estimatedDelivery),
    tracking_events: rows.map((r) => ({ timestamp: new Date(r.occurred_at).toISOString(), status: r.status, location: r.location, description: r.description })),
  };
}

export interface ShipmentFilters {
  status?: ShipmentStatus[];
  order_id?: string[];
  carrier?: string[];
}

export async function listShipments(em: EntityManager, filters: ShipmentFilters, page: { where: Record<string, unknown>; direction: 'asc' | 'desc'; limit: number }): Promise<ShipmentView[]> {
  const where: Record<string, unknown>[] = [page.where];
  if (filters.status) where.push({ status: { $in: filters.status } });
  if (filters.order_id) where.push({ orderId: { $in: filters.order_id } });
  if (filters.carrier) where.push({ carrier: { $in: filters.carrier } });
  const rows = await em.find(Shipment, { $and: where }, { orderBy: { id: page.direction }, limit: page.limit + 1 });
  return rows.map(shipmentView);
}

const EVENT_OF: Partial<Record<ShipmentStatus, `shipment.${string}`>> = {
  picked_up: 'shipment.picked_up', in_transit: 'shipment.in_transit', out_for_delivery: 'shipment.out_for_delivery',
  delivered: 'shipment.delivered', exception: 'shipment.exception', returned_to_sender: 'shipment.returned_to_sender',
};

/** The label is bought: the row (label_created) and `shipment.created`, once. */
export async function recordShipment(
  em: EntityManager, input: ShipmentWorkflowInput, label: ShipmentLabelInfo, rate: RateQuote, workflowId: string,
): Promise<ShipmentView> {
  const scope = { accountId: input.accountId, livemode: input.livemode };
  return em.transactional(async (tx) => {
    const existing = await tx.findOne(Shipment, { id: input.shipmentId });
    if (existing) return shipmentView(existing);
    const labelAt = new Date(input.labelAt);
    const row = tx.create(Shipment, {
      id: input.shipmentId, ...scopeColumns(scope), orderId: input.orderId, customerId: input.customerId, status: 'label_created',
      carrier: input.carrier, serviceLevel: input.serviceLevel, trackingNumber: label.trackingNumber, carrierReference: label.carrierReference,
      labelUrl: label.labelUrl, rateAmount: rate.amount, rateCurrency: rate.currency, rateEstimatedDays: rate.estimated_days,
      estimatedDelivery: new Date(label.estimatedDelivery), originalEstimatedDelivery: new Date(label.estimatedDelivery),
      origin: input.origin, destination: input.destination, packages: input.packages, scenario: input.scenario,
      testClockId: input.testClockId, pickupId: null, labelCreatedAt: labelAt, deliveredAt: null, cancelledAt: null, workflowId,
      requestIdempotencyKey: input.requestIdempotencyKey, metadata: input.metadata,
    });
    await tx.flush();
    await insertScans(tx, row, [{ id: `${label.trackingNumber}-label`, status: 'label_created', timestamp: input.labelAt, location: input.origin.city, description: 'Label created' }], 'poll');
    recordEvent(tx, scope, { type: 'shipment.created', object: shipmentView(row), customerId: row.customerId, requestId: input.requestId });
    await tx.flush();
    return shipmentView(row);
  });
}

async function insertScans(tx: EntityManager, s: Shipment, scans: CarrierScan[], source: 'poll' | 'push' | 'admin'): Promise<void> {
  for (const scan of scans) {
    await tx.getConnection().execute(
      `insert into shipping_tracking_events (shipment_id, carrier_event_id, account_id, livemode, status, occurred_at, location, description, source)
       values (?, ?, ?, ?, ?, ?, ?, ?, ?) on conflict do nothing`,
      [s.id, scan.id, s.accountId, s.livemode, scan.status, new Date(scan.timestamp), scan.location.slice(0, 500), scan.description.slice(0, 1000), source],
      'run', tx.getTransactionContext());
  }
}

export interface Slip {
  previous: string;
  next: string | null;
  reason: 'carrier_updated_eta' | 'eta_passed';
}

export interface ProgressInput {
  shipmentId: string;
  scans: CarrierScan[];
  source: 'poll' | 'push' | 'admin';
  /** Statuses the shipment entered, in order (each gets its event). */
  entered: ShipmentStatus[];
  status: ShipmentStatus;
  estimatedDelivery: string | null;
  slips: Slip[];
  requestId: string | null;
  /** The workflow's step number (1, 2, …): a step is applied once. */
  seq: number;
}

/**
 * Applies what the workflow learned in one transaction: the new scans, the status (with one event
 * per status entered), the ETA, and each slip once (its row is the guard: a repeat inserts nothing
 * and records no second `order.fulfillment.delayed`).
 */
export async function recordProgress(em: EntityManager, scope: Scope, input: ProgressInput): Promise<ShipmentView> {
  return em.transactional(async (tx) => {
    const s = await tx.findOne(Shipment, { id: input.shipmentId }, { lockMode: 4 });
    if (!s) throw notFound('shipment', input.shipmentId);
    // Applied already (the activity is retried after a commit whose answer was lost).
    if (s.progressSeq >= input.seq) return shipmentView(s);
    await insertScans(tx, s, input.scans, input.source);
    const now = new Date();
    s.estimatedDelivery = input.estimatedDelivery ? new Date(input.estimatedDelivery) : null;
    s.progressSeq = input.seq;
    s.updatedAt = now;
    for (const status of input.entered) {
      s.status = status;
      if (status === 'delivered') {
        const at = input.scans.find((x) => x.status === 'delivered')?.timestamp;
        s.deliveredAt = at ? new Date(at) : now;
      }
      const type = EVENT_OF[status];
      if (type) recordEvent(tx, scope, { type: type as 'shipment.delivered', object: shipmentView(s), customerId: s.customerId, requestId: input.requestId });
    }
    s.status = input.status;
    for (const slip of input.slips) {
      const inserted = await tx.getConnection().execute(
        `insert into shipping_delays (shipment_id, previous_eta, account_id, livemode, new_eta, reason) values (?, ?, ?, ?, ?, ?) on conflict do nothing`,
        [s.id, new Date(slip.previous), s.accountId, s.livemode, slip.next ? new Date(slip.next) : null, slip.reason], 'run', tx.getTransactionContext());
      if ((inserted as { affectedRows?: number }).affectedRows === 0) continue;
      const order = orderView(await findOrder(tx, s.orderId));
      const event = recordEvent(tx, scope, { type: 'order.fulfillment.delayed', object: order, customerId: s.customerId ?? order.customer_id, requestId: input.requestId });
      event.data = {
        ...event.data,
        shipment_delay: { shipment_id: s.id, previous_estimated_delivery: slip.previous, new_estimated_delivery: slip.next, reason: slip.reason },
      };
    }
    await tx.flush();
    return shipmentView(s);
  });
}

export async function recordCancel(em: EntityManager, scope: Scope, id: string, requestId: string | null): Promise<ShipmentView> {
  return em.transactional(async (tx) => {
    const s = await tx.findOne(Shipment, { id }, { lockMode: 4 });
    if (!s) throw notFound('shipment', id);
    if (s.status === 'cancelled') return shipmentView(s);
    const now = new Date();
    Object.assign(s, { status: 'cancelled', cancelledAt: now, updatedAt: now });
    recordEvent(tx, scope, { type: 'shipment.cancelled', object: shipmentView(s), customerId: s.customerId, requestId });
    await tx.flush();
    return shipmentView(s);
  });
}

/** The order's shipments, for "all delivered?" (cancelled ones do not count). */
export async function orderShipmentStatuses(em: EntityManager, orderId: string): Promise<ShipmentStatus[]> {
  const rows = await em.find(Shipment, { orderId }, { fields: ['status'] });
  return rows.map((r) => r.status);
}

export async function recordAdminAction(em: EntityManager, scope: Scope, a: { shipmentId: string; action: string; operator: string; reason: string }): Promise<void> {
  await em.getConnection().execute(
    `insert into shipping_admin_actions (shipment_id, account_id, livemode, action, operator, reason) values (?, ?, ?, ?, ?, ?)`,
    [a.shipmentId, scope.accountId, scope.livemode, a.action, a.operator, a.reason]);
}

export async function adminActions(em: EntityManager, scope: Scope, shipmentId: string) {
  return em.getConnection().execute<{ action: string; operator: string; reason: string; at: Date }[]>(
    `select action, operator, reason, at from shipping_admin_actions where shipment_id = ? and account_id = ? and livemode = ? order by id`,
    [shipmentId, scope.accountId, scope.livemode]);
}

/** The newest `perOrder` shipments of each of many orders, in one query. */
export async function shipmentsOfOrders(em: EntityManager, orderIds: readonly string[], perOrder: number): Promise<ShipmentView[]> {
  return (await findNewestPerParent(em, Shipment, 'orderId', orderIds, perOrder)).map(shipmentView);
}
