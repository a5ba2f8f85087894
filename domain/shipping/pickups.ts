import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { WorkflowNotFoundError } from '@temporalio/client';
import { conflict, notFound, validationFailed, type FieldError } from '../../platform/errors.ts';
import { pickupChangedSignal } from '../../workflows/shipping/shared.ts';
import { readScopedOr404, scopeColumns, type Scope } from '../scope.ts';
import { addBusinessDays, isBusinessDay, minutesOf, startOfDay } from './calendar.ts';
import { CarrierError } from './carriers/types.ts';
import { Shipment, ShippingPickup, ShippingTestClock } from './entities.ts';
import { carrierProblem } from './problems.ts';
import type { PickupView } from './schemas.ts';
import { pickupView } from './service.ts';
import type { ShippingContext } from './shipments.ts';

export interface SchedulePickupInput {
  shipment_ids: string[];
  pickup_date: string;
  time_window: { start: string; end: string };
  special_instructions?: string | undefined;
  contact: { name: string; phone: string };
}

const sameAddress = (a: object, b: object) => JSON.stringify(a, Object.keys(a).sort()) === JSON.stringify(b, Object.keys(b).sort());
/** Pickups are booked at most this many days ahead. */
const MAX_DAYS_AHEAD = 30;

/**
 * Books a carrier pickup for shipments that have a label: all of one carrier and one origin, none
 * already in a scheduled pickup; a future business day, a window of at least 2 h inside the
 * carrier's pickup hours. The carrier confirms, the pickup and the shipments' `pickup_id` are
 * written in one transaction, and each shipment's workflow is told (signal).
 */
export async function schedulePickup(ctx: ShippingContext, scope: Scope, input: SchedulePickupInput, pickupId: string, requestKey: string | null): Promise<PickupView> {
  const existing = await ctx.em.findOne(ShippingPickup, { id: pickupId });
  if (existing) return pickupView(existing);
  const ids = [...new Set(input.shipment_ids)];
  const shipments = await ctx.em.find(Shipment, { id: { $in: ids } });
  const byId = new Map(shipments.map((s) => [s.id, s]));
  const missing = ids.find((id) => !byId.has(id));
  if (missing) throw notFound('shipment', missing);
  const ordered = ids.map((id) => byId.get(id)!);
  const first = ordered[0]!;

  const errors: FieldError[] = [];
  ordered.forEach((s, i) => {
    if (s.carrier !== first.carrier) errors.push({ path: `shipment_ids.${i}`, message: `shipment ${s.id} goes with ${s.carrier}, not ${first.carrier}: one pickup is one carrier` });
    else if (!sameAddress(s.origin, first.origin)) errors.push({ path: `shipment_ids.${i}`, message: `shipment ${s.id} leaves from another origin than ${first.id}: one pickup is one address` });
  });
  if (errors.length) throw validationFailed(errors);
  const notReady = ordered.find((s) => s.status !== 'label_created');
  if (notReady) {
    throw conflict('invalid_state_transition', `Shipment ${notReady.id} is ${notReady.status}; only shipments with a label that were not picked up yet can be picked up.`,
      'Schedule pickups for shipments whose status is label_created.', { current_state: notReady.status, shipment_id: notReady.id });
  }
  const booked = ordered.find((s) => s.pickupId);
  if (booked) {
    throw conflict('pickup_already_scheduled', `Shipment ${booked.id} is already in pickup ${booked.pickupId}.`,
      'Cancel that pickup first (POST /v3/shipping/pickups/{id}/cancel), or leave the shipment out.', { pickup_id: booked.pickupId, shipment_id: booked.id });
  }

  const carrier = ctx.carriers.get(first.carrier);
  // "Today" is the carrier's: a shipment on a test clock lives at the clock's time.
  const clock = first.testClockId ? await ctx.em.findOne(ShippingTestClock, { id: first.testClockId }) : null;
  const today = startOfDay(clock?.frozenTime ?? new Date());
  const day = new Date(`${input.pickup_date}T00:00:00Z`);
  if (day.getTime() <= today.getTime()) errors.push({ path: 'pickup_date', message: `must be a future day (after ${today.toISOString().slice(0, 10)})` });
  else if (!isBusinessDay(day)) errors.push({ path: 'pickup_date', message: `${input.pickup_date} is a ${day.getUTCDay() === 0 ? 'Sunday' : 'Saturday'}; pickups are on business days (next: ${addBusinessDays(day, 0).toISOString().slice(0, 10)})` });
  else if (day.getTime() > today.getTime() + MAX_DAYS_AHEAD * 86_400_000) errors.push({ path: 'pickup_date', message: `at most ${MAX_DAYS_AHEAD} days ahead` });
  const start = minutesOf(input.time_window.start);
  const end = minutesOf(input.time_window.end);
  if (end - start < 120) errors.push({ path: 'time_window', message: 'the window must be at least 2 hours long (end at least 2 h after start)' });
  if (start < minutesOf(carrier.pickupHours.open)) errors.push({ path: 'time_window.start', message: `${carrier.name} picks up from ${carrier.pickupHours.open} (UTC)` });
  if (end > minutesOf(carrier.pickupHours.close)) errors.push({ path: 'time_window.end', message: `${carrier.name} picks up until ${carrier.pickupHours.close} (UTC)` });
  if (errors.length) throw validationFailed(errors);

  let confirmation: { confirmationNumber: string; carrierReference: string };
  try {
    confirmation = await carrier.schedulePickup({
      pickupId, carrierReferences: ordered.map((s) => s.carrierReference), trackingNumbers: ordered.map((s) => s.trackingNumber),
      address: first.origin, date: input.pickup_date, windowStart: input.time_window.start, windowEnd: input.time_window.end,
      instructions: input.special_instructions ?? null, contact: input.contact,
    });
  } catch (err) {
    if (err instanceof CarrierError) throw carrierProblem(err);
    throw err;
  }
  const view = await ctx.em.transactional(async (tx: EntityManager) => {
    const pickup = tx.create(ShippingPickup, {
      id: pickupId, ...scopeColumns(scope), carrier: carrier.name, status: 'scheduled', confirmationNumber: confirmation.confirmationNumber,
      carrierReference: confirmation.carrierReference, pickupDate: input.pickup_date, windowStart: input.time_window.start, windowEnd: input.time_window.end,
      specialInstructions: input.special_instructions ?? null, contact: input.contact, address: first.origin, shipmentIds: ids,
      requestIdempotencyKey: requestKey, cancelledAt: null,
    });
    await tx.nativeUpdate(Shipment, { id: { $in: ids }, pickupId: null }, { pickupId, updatedAt: new Date() });
    await tx.flush();
    return pickupView(pickup);
  });
  await tellShipments(ctx, ordered.map((s) => s.workflowId), pickupId);
  return view;
}

async function tellShipments(ctx: ShippingContext, workflowIds: string[], pickupId: string | null): Promise<void> {
  await Promise.all(workflowIds.map(async (id) => {
    try {
      await ctx.temporal.client.workflow.getHandle(id).signal(pickupChangedSignal, { pickupId });
    } catch (err) {
      if (!(err instanceof WorkflowNotFoundError)) throw err;
    }
  }));
}

/** A pickup by id for GET /v3/shipping/pickups/{id}: one prepared statement, no EntityManager (readScopedOr404). */
export async function readPickup(orm: MikroORM, scope: Scope, id: string): Promise<PickupView> {
  return pickupView(await readScopedOr404(orm, scope, ShippingPickup, id, 'pickup'));
}

export async function getPickup(em: EntityManager, id: string): Promise<PickupView> {
  const p = await em.findOne(ShippingPickup, { id });
  if (!p) throw notFound('pickup', id);
  return pickupView(p);
}

export async function cancelPickup(ctx: ShippingContext, id: string): Promise<PickupView> {
  const pickup = await ctx.em.findOne(ShippingPickup, { id });
  if (!pickup) throw notFound('pickup', id);
  if (pickup.status === 'cancelled') {
    throw conflict('invalid_state_transition', `Pickup ${id} is cancelled already.`, 'Schedule a new pickup if the shipments still need one.', { current_state: 'cancelled' });
  }
  try {
    await ctx.carriers.get(pickup.carrier).cancelPickup({ carrierReference: pickup.carrierReference });
  } catch (err) {
    if (err instanceof CarrierError) throw carrierProblem(err);
    throw err;
  }
  await ctx.em.transactional(async (tx: EntityManager) => {
    await tx.nativeUpdate(ShippingPickup, { id }, { status: 'cancelled', cancelledAt: new Date() });
    await tx.nativeUpdate(Shipment, { pickupId: id }, { pickupId: null, updatedAt: new Date() });
  });
  const shipments = await ctx.em.fork().find(Shipment, { id: { $in: pickup.shipmentIds } }, { fields: ['workflowId'] });
  await tellShipments(ctx, shipments.map((s) => s.workflowId), null);
  ctx.em.clear();
  return getPickup(ctx.em, id);
}

