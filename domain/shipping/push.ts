import type { EntityManager } from '@mikro-orm/postgresql';
import { WorkflowNotFoundError } from '@temporalio/client';
import { z } from 'zod';
import { ApiError, notFound } from '../../platform/errors.ts';
import type { TemporalHandle } from '../../platform/temporal.ts';
import { carrierScansSignal } from '../../workflows/shipping/shared.ts';
import type { Scope } from '../scope.ts';
import type { CarrierAdapters } from './carriers/index.ts';
import { PushRejectedError, SHIPMENT_STATUSES } from './carriers/types.ts';
import { Shipment } from './entities.ts';

const scanSchema = z.object({
  id: z.string().min(1).max(200),
  status: z.enum(SHIPMENT_STATUSES),
  timestamp: z.iso.datetime(),
  location: z.string().max(500),
  description: z.string().max(1000),
  estimated_delivery: z.iso.datetime().nullable().optional(),
});

/**
 * A carrier's tracking push (`POST /v3/shipping/carriers/{carrier}/events`): the carrier's
 * signature is verified first (401 when it does not), then the push is taken once per carrier
 * event id: a repeat answers `duplicate: true` and changes nothing. The shipment's workflow gets the
 * scans by signal (and ignores scans it has seen, so a crash between the signal and the receipt
 * cannot apply one twice).
 */
export async function receivePush(
  em: EntityManager, temporal: TemporalHandle, carriers: CarrierAdapters, scope: Scope,
  carrierName: string, body: unknown, headers: Record<string, string | undefined>,
): Promise<{ object: 'carrier_push_receipt'; carrier: string; event_id: string; shipment_id: string; duplicate: boolean }> {
  const carrier = carriers.all.get(carrierName);
  if (!carrier || !carriers.usable(scope.livemode).includes(carrierName)) throw notFound('carrier', carrierName);
  let push;
  try {
    push = carrier.readPush(body, headers, new Date());
  } catch (err) {
    if (err instanceof PushRejectedError) {
      throw new ApiError({
        status: 401, code: 'carrier_signature_invalid', title: 'Unauthorized', detail: err.message,
        suggestion: 'Sign the exact JSON body with the carrier\'s push secret (docs/shipping.md, "Carrier pushes").',
      });
    }
    throw err;
  }
  const scans = z.array(scanSchema).max(500).safeParse(push.scans);
  if (!scans.success || !push.eventId || !push.trackingNumber) {
    throw new ApiError({
      status: 422, code: 'validation_failed', title: 'Validation Failed', detail: 'The push is signed but its content is not a tracking update.',
      suggestion: 'Send id, tracking_number and scans[] (id, status, timestamp, location, description).',
      errors: scans.success ? [{ path: 'id', message: 'id and tracking_number are required' }] : scans.error.issues.map((i) => ({ path: `scans.${i.path.join('.')}`, message: i.message })),
    });
  }
  const shipment = await em.findOne(Shipment, { carrier: carrierName, trackingNumber: push.trackingNumber });
  if (!shipment) throw notFound('shipment with tracking number', push.trackingNumber);
  const receipt = { object: 'carrier_push_receipt' as const, carrier: carrierName, event_id: push.eventId, shipment_id: shipment.id };
  const seen = await em.getConnection().execute<{ n: number }[]>(
    'select 1 as n from shipping_push_receipts where account_id = ? and livemode = ? and carrier = ? and event_id = ?',
    [scope.accountId, scope.livemode, carrierName, push.eventId]);
  if (seen.length) return { ...receipt, duplicate: true };
  try {
    await temporal.client.workflow.getHandle(shipment.workflowId).signal(carrierScansSignal, {
      scans: scans.data.map((s) => ({ ...s, estimated_delivery: s.estimated_delivery ?? null })), estimatedDelivery: push.estimatedDelivery,
    });
  } catch (err) {
    // The journey is over (delivered, returned, cancelled): nothing more to follow.
    if (!(err instanceof WorkflowNotFoundError)) throw err;
  }
  const inserted = await em.getConnection().execute(
    `insert into shipping_push_receipts (carrier, event_id, account_id, livemode, shipment_id) values (?, ?, ?, ?, ?) on conflict do nothing`,
    [carrierName, push.eventId, scope.accountId, scope.livemode, shipment.id], 'run');
  return { ...receipt, duplicate: (inserted as { affectedRows?: number }).affectedRows === 0 };
}
