import type { EntityManager } from '@mikro-orm/postgresql';
import { parsePhoneNumber } from 'awesome-phonenumber';
import { z } from 'zod';
import { postalProblems } from '../../../domain/shipping/addresses.ts';
import { SERVICE_LEVELS, SHIPMENT_STATUSES, type Parcel } from '../../../domain/shipping/carriers/types.ts';
import { cancelPickup, readPickup, schedulePickup } from '../../../domain/shipping/pickups.ts';
import { receivePush } from '../../../domain/shipping/push.ts';
import {
  pickupSchema, pushReceiptSchema, rateComparisonSchema, ratesSchema, shipmentSchema, shipmentTrackingSchema, shippingTestClockSchema,
} from '../../../domain/shipping/schemas.ts';
import { getTracking, listShipments, readShipment } from '../../../domain/shipping/service.ts';
import {
  advanceTestClock, cancelShipment, createShipment, createTestClock, markComparison, readTestClock, quoteRates, type ShippingContext,
} from '../../../domain/shipping/shipments.ts';
import type { AppDeps } from '../../http/deps.ts';
import { listQuery, listRoute } from '../../http/pagination.ts';
import { getRoute, route } from '../../http/route.ts';
import { MAX_MINOR_UNITS, csv, isoDate, jsonValue, metadata } from '../../http/schemas.ts';

const id = z.string().min(1).max(64);
const country = z.string().regex(/^[A-Za-z]{2}$/, 'expected a two-letter ISO 3166-1 country code such as US').transform((c) => c.toUpperCase());

/** Country and postal code checked together (the postal code's format depends on the country). */
function withPostalCheck<T extends z.ZodType<{ country: string; postal_code: string }>>(schema: T) {
  return schema.superRefine((a, ctx) => {
    for (const e of postalProblems(a.country, a.postal_code, '')) ctx.addIssue({ code: 'custom', path: [e.path], message: e.message });
  });
}

const address = withPostalCheck(z.strictObject({
  address: z.string().trim().min(1).max(200),
  city: z.string().trim().min(1).max(100),
  country,
  postal_code: z.string().trim().min(1).max(20),
}));

const point = withPostalCheck(z.strictObject({
  country,
  postal_code: z.string().trim().min(1).max(20),
  address: z.string().trim().min(1).max(200).optional(),
  city: z.string().trim().min(1).max(100).optional(),
}));

const measure = (what: string) => z.number().positive(`${what} must be greater than 0`).max(1000, `${what} is at most 1000`);
const parcel = z.strictObject({
  weight: measure('weight').describe('Kilograms.'),
  dimensions: z.strictObject({ length: measure('length'), width: measure('width'), height: measure('height') }).describe('Centimetres.'),
  value: z.number().int('value is an integer number of minor units').min(0).max(MAX_MINOR_UNITS).optional().describe('Declared value, minor units.'),
});
const packages = z.array(parcel).min(1, 'a shipment has at least one package').max(50);

const createBody = z.strictObject({
  order_id: id,
  origin: address,
  destination: address,
  packages,
  service_level: z.enum(SERVICE_LEVELS),
  carrier: z.string().min(1).max(40).optional().describe('A carrier by name; default the account\'s default, else the cheapest.'),
  test_clock: id.optional().describe('Sandbox only: run the journey on this shipping test clock.'),
  metadata: metadata.optional().describe('`sandbox_scenario` chooses a sandbox journey: delivered (default), delayed, exception, lost.'),
});

const ratesQuery = z.strictObject({
  origin_postal: z.string().trim().min(1).max(20),
  destination_postal: z.string().trim().min(1).max(20),
  weight: z.coerce.number().positive('weight must be greater than 0').max(1000).describe('Kilograms.'),
  origin_country: country.default('US'),
  destination_country: country.optional().describe('Default: origin_country.'),
  length: z.coerce.number().positive().max(1000).optional(),
  width: z.coerce.number().positive().max(1000).optional(),
  height: z.coerce.number().positive().max(1000).optional(),
  service_level: csv(z.enum(SERVICE_LEVELS)).optional(),
  carrier: csv(z.string().min(1).max(40)).optional(),
}).superRefine((q, ctx) => {
  const dims = [q.length, q.width, q.height].filter((d) => d !== undefined).length;
  if (dims !== 0 && dims !== 3) ctx.addIssue({ code: 'custom', path: ['length'], message: 'send length, width and height together (cm), or none' });
  const add = (path: string) => (e: { path: string; message: string }) => ctx.addIssue({ code: 'custom', path: [`${path}${e.path.replace('postal_code', 'postal').replace('country', 'country')}`], message: e.message });
  postalProblems(q.origin_country, q.origin_postal, 'origin_').forEach(add(''));
  postalProblems(q.destination_country ?? q.origin_country, q.destination_postal, 'destination_').forEach(add(''));
});

const compareBody = z.strictObject({
  origin: point,
  destination: point,
  packages,
  carriers: z.array(z.string().min(1).max(40)).min(1).max(10).optional(),
  service_levels: z.array(z.enum(SERVICE_LEVELS)).min(1).max(3).optional(),
});

const hhmm = z.string().regex(/^([01]\d|2[0-3]):[0-5]\d$/, 'expected a time as HH:MM (24 h, UTC)');
const pickupBody = z.strictObject({
  shipment_ids: z.array(id).min(1).max(50),
  pickup_date: isoDate,
  time_window: z.strictObject({ start: hhmm, end: hhmm }),
  special_instructions: z.string().max(500).optional(),
  contact: z.strictObject({
    name: z.string().trim().min(1).max(100),
    phone: z.string().max(32).refine((p) => parsePhoneNumber(p).valid, 'expected a phone number in international form, e.g. +14155550123'),
  }),
});

const listShipmentsQuery = z.strictObject({
  ...listQuery,
  status: csv(z.enum(SHIPMENT_STATUSES)).optional().describe('Statuses, comma-separated.'),
  order_id: csv(z.string().min(1).max(64)).optional(),
  carrier: csv(z.string().min(1).max(40)).optional(),
});

const clockBody = z.strictObject({
  frozen_time: z.iso.datetime({ offset: true }).optional().describe('Default: now.'),
  name: z.string().max(100).optional(),
});
const advanceBody = z.strictObject({ frozen_time: z.iso.datetime({ offset: true }) });

const shipmentId = z.strictObject({ shipment_id: id });
const pickupId = z.strictObject({ pickup_id: id });
const shippingClockId = z.strictObject({ shipping_clock_id: id });
const carrierParam = z.strictObject({ carrier: z.string().min(1).max(40) });

function ctxOf(deps: AppDeps, em: EntityManager): ShippingContext {
  return { em, temporal: deps.temporal, carriers: deps.carriers };
}

const parcels = (list: z.output<typeof packages>): Parcel[] => list.map((p) => ({ weight: p.weight, dimensions: p.dimensions, value: p.value }));

export const shippingRoutes = [
  route({
    method: 'post', path: '/v3/shipping/create', operationId: 'createShipment', tag: 'Shipping',
    summary: 'Create a shipment for an order: the carrier sells the label; its journey runs in a workflow',
    permission: 'shipping:write', status: 201, temporal: true,
    body: createBody, response: shipmentSchema,
    responses: { 404: { description: 'No such order in this account and mode (not_found)' } },
    async handler({ deps, em, auth, body, requestId, idempotencyKey, resourceId }) {
      const view = await createShipment(ctxOf(deps, em()), auth, { ...body, packages: parcels(body.packages) }, await resourceId('shipment'), { requestId, idempotencyKey });
      return { body: view, headers: { Location: `/v3/shipping/${view.id}` } };
    },
  }),
  listRoute({
    path: '/v3/shipping', operationId: 'listShipments', tag: 'Shipping', summary: 'List shipments, filtered by status, order and carrier',
    permission: 'shipping:read', query: listShipmentsQuery, item: shipmentSchema,
    list: ({ em, query }, page) => listShipments(em(), query, page),
  }),
  route({
    method: 'get', path: '/v3/shipping/rates', operationId: 'getShippingRates', tag: 'Shipping',
    summary: 'Rates of every available carrier for one package between two postal codes, cheapest first',
    permission: 'shipping:read', status: 200, query: ratesQuery, response: ratesSchema,
    async handler({ deps, em, auth, query }) {
      const dims = query.length !== undefined && query.width !== undefined && query.height !== undefined
        ? { length: query.length, width: query.width, height: query.height } : undefined;
      const result = await quoteRates(ctxOf(deps, em()), auth, {
        origin: { country: query.origin_country, postal_code: query.origin_postal },
        destination: { country: query.destination_country ?? query.origin_country, postal_code: query.destination_postal },
        packages: [{ weight: query.weight, dimensions: dims }], serviceLevels: query.service_level, at: new Date(),
      }, query.carrier);
      return { body: { object: 'shipping_rates', rates: result.rates, errors: result.errors } };
    },
  }),
  route({
    method: 'post', path: '/v3/shipping/rates/compare', operationId: 'compareShippingRates', tag: 'Shipping',
    summary: 'Ask every carrier in parallel (each with its own timeout): rates sorted by amount, cheapest and fastest marked, failed carriers in errors',
    permission: 'shipping:read', status: 200, body: compareBody, response: rateComparisonSchema,
    async handler({ deps, em, auth, body }) {
      const result = await quoteRates(ctxOf(deps, em()), auth, {
        origin: body.origin, destination: body.destination, packages: parcels(body.packages), serviceLevels: body.service_levels, at: new Date(),
      }, body.carriers);
      return { body: markComparison(result.rates, result.errors) };
    },
  }),
  route({
    method: 'post', path: '/v3/shipping/pickup/schedule', operationId: 'schedulePickup', tag: 'Shipping',
    summary: 'Book a carrier pickup for shipments with a label (one carrier, one origin, a future business day, a window of 2 h or more)',
    permission: 'shipping:write', status: 201, temporal: true, body: pickupBody, response: pickupSchema,
    responses: { 404: { description: 'A shipment of shipment_ids does not exist in this account and mode (not_found)' } },
    async handler({ deps, em, auth, body, idempotencyKey, resourceId }) {
      const view = await schedulePickup(ctxOf(deps, em()), auth, body, await resourceId('pickup'), idempotencyKey);
      return { body: view, headers: { Location: `/v3/shipping/pickups/${view.id}` } };
    },
  }),
  getRoute({
    path: '/v3/shipping/pickups/{pickup_id}', operationId: 'getPickup', tag: 'Shipping', summary: 'Retrieve a pickup',
    permission: 'shipping:read', readOnly: true, params: pickupId, response: pickupSchema,
    get: ({ deps, auth, params }) => readPickup(deps.orm, auth, params.pickup_id),
  }),
  route({
    method: 'post', path: '/v3/shipping/pickups/{pickup_id}/cancel', operationId: 'cancelPickup', tag: 'Shipping',
    summary: 'Cancel a scheduled pickup', permission: 'shipping:write', status: 200, temporal: true,
    params: pickupId, response: pickupSchema,
    async handler({ deps, em, params }) {
      return { body: await cancelPickup(ctxOf(deps, em()), params.pickup_id) };
    },
  }),
  route({
    method: 'post', path: '/v3/shipping/test_clocks', operationId: 'createShippingTestClock', tag: 'Shipping',
    summary: 'Create a shipping test clock (sandbox only): shipments on it move only when it is advanced',
    permission: 'shipping:write', status: 201, body: clockBody, response: shippingTestClockSchema,
    async handler({ em, auth, body, resourceId }) {
      const clock = await createTestClock(em(), auth, await resourceId('shippingClock'), { frozenTime: body.frozen_time ? new Date(body.frozen_time) : new Date(), name: body.name ?? null });
      return { body: clock, headers: { Location: `/v3/shipping/test_clocks/${clock.id}` } };
    },
  }),
  getRoute({
    path: '/v3/shipping/test_clocks/{shipping_clock_id}', operationId: 'getShippingTestClock', tag: 'Shipping', summary: 'Retrieve a shipping test clock',
    permission: 'shipping:read', readOnly: true, params: shippingClockId, response: shippingTestClockSchema,
    get: ({ deps, auth, params }) => readTestClock(deps.orm, auth, params.shipping_clock_id),
  }),
  route({
    method: 'post', path: '/v3/shipping/test_clocks/{shipping_clock_id}/advance', operationId: 'advanceShippingTestClock', tag: 'Shipping',
    summary: 'Advance a shipping test clock; answers once every shipment on it has caught up',
    permission: 'shipping:write', status: 200, temporal: true, temporalWaitMs: () => 55_000,
    params: shippingClockId, body: advanceBody, response: shippingTestClockSchema,
    async handler({ deps, em, params, body }) {
      return { body: await advanceTestClock(ctxOf(deps, em()), params.shipping_clock_id, new Date(body.frozen_time)) };
    },
  }),
  route({
    method: 'post', path: '/v3/shipping/carriers/{carrier}/events', operationId: 'receiveCarrierEvents', tag: 'Shipping',
    summary: 'Tracking push from a carrier: verified by the carrier\'s signature, deduplicated by its event id',
    permission: 'shipping:write', status: 200, temporal: true,
    params: carrierParam, body: z.record(z.string(), jsonValue), response: pushReceiptSchema,
    responses: {
      401: { description: 'The carrier\'s signature does not verify (carrier_signature_invalid)' },
      404: { description: 'Unknown carrier, or no shipment with the tracking number in this account and mode' },
    },
    async handler({ deps, em, auth, params, body, req }) {
      const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k.toLowerCase(), Array.isArray(v) ? v[0] : v]));
      return { body: await receivePush(em(), deps.temporal, deps.carriers, auth, params.carrier, body, headers) };
    },
  }),
  getRoute({
    path: '/v3/shipping/{shipment_id}', operationId: 'getShipment', tag: 'Shipping', summary: 'Retrieve a shipment',
    permission: 'shipping:read', readOnly: true, params: shipmentId, response: shipmentSchema,
    get: ({ deps, auth, params }) => readShipment(deps.orm, auth, params.shipment_id),
  }),
  getRoute({
    path: '/v3/shipping/{shipment_id}/track', operationId: 'trackShipment', tag: 'Shipping',
    summary: 'A shipment\'s tracking: status, estimated delivery and every scan, oldest first',
    permission: 'shipping:read', params: shipmentId, response: shipmentTrackingSchema,
    get: ({ em, params }) => getTracking(em(), params.shipment_id),
  }),
  route({
    method: 'post', path: '/v3/shipping/{shipment_id}/cancel', operationId: 'cancelShipment', tag: 'Shipping',
    summary: 'Cancel a shipment before pickup; its label is voided', permission: 'shipping:write', status: 200, temporal: true,
    params: shipmentId, response: shipmentSchema,
    async handler({ deps, em, params, requestId }) {
      return { body: await cancelShipment(ctxOf(deps, em()), params.shipment_id, requestId) };
    },
  }),
];
