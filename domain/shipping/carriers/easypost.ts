import { createRequire } from 'node:module';
import { toMinorUnits } from '../../money.ts';
import { estimatedDelivery } from '../calendar.ts';
import {
  CarrierError, PushRejectedError, SERVICE_LEVELS,
  type CarrierAdapter, type CarrierPush, type CarrierScan, type Label, type LabelRequest, type Parcel, type RateQuote, type RateRequest,
  type ServiceLevel, type ShipmentStatus, type ShippingAddress, type TrackRequest, type TrackResult,
} from './types.ts';

/**
 * The EasyPost aggregator through its official SDK (`@easypost/api`). EasyPost answers with the
 * rates of the carrier accounts behind it; we map each to a service level by its service name and
 * delivery days, and keep the cheapest per level. One EasyPost shipment carries one parcel, so a
 * shipment through EasyPost has one package (docs/shipping.md).
 */
export interface EasyPostOptions {
  apiKey: string;
  /** Another API base (a local server in tests); default EasyPost's. */
  baseUrl?: string | undefined;
  /** Secret of the EasyPost webhook (X-Hmac-Signature). */
  webhookSecret?: string | undefined;
  timeoutMs?: number;
}

interface EpRate { id: string; carrier: string; service: string; rate: string; currency: string; delivery_days?: number | null; delivery_date?: string | null }
interface EpTrackingDetail { datetime: string; status: string; status_detail?: string | null; message?: string | null; tracking_location?: { city?: string | null; state?: string | null; country?: string | null } | null }
interface EpTracker { id?: string; tracking_code: string; status: string; est_delivery_date?: string | null; tracking_details?: EpTrackingDetail[] }
interface EpShipment {
  id: string; reference?: string | null; rates?: EpRate[]; selected_rate?: EpRate | null; tracking_code?: string | null;
  postage_label?: { label_url?: string | null } | null; tracker?: EpTracker | null;
}

/** Service level of an EasyPost rate: by its service name, else its delivery days. */
export function serviceLevelOf(rate: Pick<EpRate, 'service' | 'delivery_days'>): ServiceLevel {
  const name = rate.service.toLowerCase().replace(/[_-]+/g, ' ').trim();
  if (/overnight|next ?day|nextday|1 ?day|express ?mail|expressmail|^express$/.test(name)) return 'overnight';
  if (/express|2 ?day|second|priority|expedited/.test(name)) return 'express';
  if (rate.delivery_days != null) {
    if (rate.delivery_days <= 1) return 'overnight';
    if (rate.delivery_days <= 3) return 'express';
  }
  return 'ground';
}

const STATUS: Record<string, ShipmentStatus> = {
  pre_transit: 'label_created', in_transit: 'in_transit', out_for_delivery: 'out_for_delivery', delivered: 'delivered',
  available_for_pickup: 'out_for_delivery', return_to_sender: 'returned_to_sender', failure: 'exception', error: 'exception',
  cancelled: 'cancelled',
};

function scanOf(trackingCode: string, d: EpTrackingDetail): CarrierScan | null {
  let status = STATUS[d.status];
  if (!status) return null;
  if (status === 'in_transit' && (d.status_detail === 'picked_up' || /picked up/i.test(d.message ?? ''))) status = 'picked_up';
  const loc = d.tracking_location;
  const location = [loc?.city, loc?.state, loc?.country].filter(Boolean).join(', ');
  // Tracking details carry no id: the scan's time, status and message identify it.
  return { id: `${trackingCode}:${d.datetime}:${d.status}:${d.status_detail ?? ''}`, status, timestamp: new Date(d.datetime).toISOString(), location, description: d.message ?? d.status };
}

function trackResult(tracker: EpTracker): TrackResult {
  const scans = (tracker.tracking_details ?? []).map((d) => scanOf(tracker.tracking_code, d)).filter((s): s is CarrierScan => s !== null);
  return { scans, estimatedDelivery: tracker.est_delivery_date ? new Date(tracker.est_delivery_date).toISOString() : null };
}

function address(a: ShippingAddress) {
  return { street1: a.address, city: a.city, country: a.country, zip: a.postal_code };
}

function parcel(p: Parcel) {
  // EasyPost takes ounces and inches.
  const inches = (cm: number) => Math.round((cm / 2.54) * 100) / 100;
  return {
    weight: Math.round(p.weight * 35.27396195 * 100) / 100,
    ...(p.dimensions ? { length: inches(p.dimensions.length), width: inches(p.dimensions.width), height: inches(p.dimensions.height) } : {}),
  };
}

/** The part of the SDK's client we use (its published types do not declare the default export). */
interface EasyPostSdk {
  Shipment: { create(p: object): Promise<unknown>; retrieve(id: string): Promise<unknown>; buy(id: string, rate: string): Promise<unknown>; refund(id: string): Promise<unknown> };
  Pickup: { create(p: object): Promise<unknown>; buy(id: string, carrier: string, service: string): Promise<unknown>; cancel(id: string): Promise<unknown> };
  Utils: { validateWebhook(body: Buffer, headers: Record<string, string>, secret: string): unknown };
}
type EasyPostClient = new (apiKey: string, options?: { baseUrl?: string; timeout?: number }) => EasyPostSdk;

export function createEasyPostCarrier(opts: EasyPostOptions): CarrierAdapter {
  // Loaded here, not at import: only a process configured for EasyPost pays for its SDK (~5 MB of heap).
  const EasyPostClient = createRequire(import.meta.url)('@easypost/api') as EasyPostClient;
  const client = new EasyPostClient(opts.apiKey, { ...(opts.baseUrl ? { baseUrl: opts.baseUrl } : {}), timeout: opts.timeoutMs ?? 20_000 });
  const name = 'easypost';

  /** EasyPost's errors as ours: 5xx, 408, 429 and network failures are outages; 4xx are answers. */
  function mapError(err: unknown): never {
    if (err instanceof CarrierError) throw err;
    const e = err as { statusCode?: number; code?: string; message?: string; errors?: { field?: string; message?: string }[] };
    const status = e.statusCode;
    if (status === undefined || status >= 500 || status === 408 || status === 429) {
      throw new CarrierError(name, status === 408 || status === 504 ? 'carrier_timeout' : 'carrier_unavailable', `EasyPost did not answer (${status ?? e.code ?? 'network error'}): ${e.message ?? ''}`.trim());
    }
    if (status === 404) throw new CarrierError(name, 'carrier_error', `EasyPost: ${e.message ?? 'not found'}`, { retryable: false });
    const field = e.errors?.[0]?.field ?? '';
    if (/ADDRESS|address|zip|street|city/.test(`${e.code ?? ''} ${field}`)) {
      throw new CarrierError(name, 'address_rejected', `EasyPost rejected the address: ${e.message ?? e.code}`, { field: /from|origin/.test(field) ? 'origin.address' : 'destination.address' });
    }
    throw new CarrierError(name, 'carrier_error', `EasyPost refused the request: ${e.message ?? e.code ?? status}`, { retryable: false });
  }

  function oneParcel(packages: Parcel[]): Parcel {
    if (packages.length !== 1) {
      throw new CarrierError(name, 'package_exceeds_limits', 'An EasyPost shipment carries exactly one package: send one shipment per package.', { field: 'packages' });
    }
    return packages[0]!;
  }

  /** EasyPost's delivery date when it gives one, else the delivery days from `at` (5 business days when unknown). */
  function quotes(rates: EpRate[], levels: readonly ServiceLevel[], at: Date): { quote: RateQuote; rate: EpRate }[] {
    const best = new Map<ServiceLevel, { quote: RateQuote; rate: EpRate }>();
    for (const rate of rates) {
      const level = serviceLevelOf(rate);
      if (!levels.includes(level)) continue;
      const quote: RateQuote = {
        carrier: name, service_level: level, amount: toMinorUnits(rate.rate, rate.currency), currency: rate.currency.toUpperCase(),
        estimated_days: rate.delivery_days ?? 0,
        estimated_delivery: rate.delivery_date ? new Date(rate.delivery_date).toISOString() : estimatedDelivery(at, '17:00', rate.delivery_days ?? 5).toISOString(),
      };
      const current = best.get(level);
      if (!current || quote.amount < current.quote.amount) best.set(level, { quote, rate });
    }
    return [...best.values()];
  }

  async function createShipment(req: { origin: ShippingAddress; destination: ShippingAddress; packages: Parcel[]; reference?: string }): Promise<EpShipment> {
    return (await client.Shipment.create({
      to_address: address(req.destination), from_address: address(req.origin), parcel: parcel(oneParcel(req.packages)),
      ...(req.reference ? { reference: req.reference } : {}),
    }).catch(mapError)) as unknown as EpShipment;
  }

  async function retrieve(idOrReference: string): Promise<EpShipment | null> {
    try {
      return (await client.Shipment.retrieve(idOrReference)) as unknown as EpShipment;
    } catch (err) {
      if ((err as { statusCode?: number }).statusCode === 404) return null;
      return mapError(err);
    }
  }

  function labelOf(s: EpShipment, levels: readonly ServiceLevel[], at: Date): Label {
    const selected = s.selected_rate!;
    const [quote] = quotes([selected], levels.length ? levels : SERVICE_LEVELS, at);
    return {
      trackingNumber: s.tracking_code ?? s.tracker?.tracking_code ?? '',
      labelUrl: s.postage_label?.label_url ?? '',
      carrierReference: s.id,
      rate: quote?.quote ?? { carrier: name, service_level: serviceLevelOf(selected), amount: toMinorUnits(selected.rate, selected.currency), currency: selected.currency, estimated_days: selected.delivery_days ?? 0, estimated_delivery: estimatedDelivery(at, '17:00', selected.delivery_days ?? 5).toISOString() },
    };
  }

  return {
    name,
    kind: 'easypost',
    serviceLevels: SERVICE_LEVELS,
    limits: { maxWeightKg: 68, maxSideCm: 274, maxPackages: 1 },
    pickupHours: { open: '08:00', close: '18:00' },

    async rates(req: RateRequest): Promise<RateQuote[]> {
      const at = { address: '', city: '' };
      const s = await createShipment({ origin: { ...at, ...req.origin }, destination: { ...at, ...req.destination }, packages: req.packages });
      return quotes(s.rates ?? [], req.serviceLevels ?? SERVICE_LEVELS, req.at).map((q) => q.quote);
    },

    async buyLabel(req: LabelRequest): Promise<Label> {
      // Idempotent: the shipment is created with our id as its reference, and a retry finds it.
      const existing = await retrieve(req.shipmentId);
      if (existing?.postage_label?.label_url && existing.selected_rate) return labelOf(existing, [req.serviceLevel], req.at);
      const s = existing ?? await createShipment({ ...req, reference: req.shipmentId });
      const pick = quotes(s.rates ?? [], [req.serviceLevel], req.at)[0];
      if (!pick) throw new CarrierError(name, 'service_not_offered', `No carrier behind EasyPost offers ${req.serviceLevel} for this route.`, { field: 'service_level' });
      const bought = (await client.Shipment.buy(s.id, pick.rate.id).catch(mapError)) as unknown as EpShipment;
      return labelOf(bought, [req.serviceLevel], req.at);
    },

    async voidLabel(req) {
      await client.Shipment.refund(req.carrierReference).catch(mapError);
    },

    async schedulePickup(req) {
      const created = (await client.Pickup.create({
        reference: req.pickupId, address: address(req.address), shipment: { id: req.carrierReferences[0] },
        min_datetime: `${req.date}T${req.windowStart}:00Z`, max_datetime: `${req.date}T${req.windowEnd}:00Z`,
        instructions: req.instructions ?? '', is_account_address: false,
      }).catch(mapError)) as unknown as { id: string; pickup_rates?: { carrier: string; service: string; rate: string }[] };
      const rate = [...(created.pickup_rates ?? [])].sort((a, b) => Number(a.rate) - Number(b.rate))[0];
      if (!rate) throw new CarrierError(name, 'service_not_offered', 'The carrier offers no pickup for this address and window.', { field: 'time_window' });
      const bought = (await client.Pickup.buy(created.id, rate.carrier, rate.service).catch(mapError)) as unknown as { id: string; confirmation: string };
      return { confirmationNumber: bought.confirmation, carrierReference: bought.id };
    },

    async cancelPickup(req) {
      await client.Pickup.cancel(req.carrierReference).catch(mapError);
    },

    async track(req: TrackRequest): Promise<TrackResult> {
      const s = await retrieve(req.carrierReference);
      if (!s?.tracker) return { scans: [], estimatedDelivery: null };
      return trackResult(s.tracker);
    },

    readPush(body: unknown, headers: Record<string, string | undefined>): CarrierPush {
      if (!opts.webhookSecret) throw new PushRejectedError('No EasyPost webhook secret is configured (EASYPOST_WEBHOOK_SECRET), so no EasyPost push can be verified.');
      let event: { id?: string; description?: string; result?: EpTracker };
      try {
        event = client.Utils.validateWebhook(Buffer.from(JSON.stringify(body)), headers as Record<string, string>, opts.webhookSecret) as typeof event;
      } catch {
        throw new PushRejectedError('The push\'s X-Hmac-Signature does not verify with the EasyPost webhook secret.');
      }
      if (!event.id || !event.result?.tracking_code) throw new PushRejectedError('The push is not an EasyPost tracker event (id and result.tracking_code are required).');
      const { scans, estimatedDelivery } = trackResult(event.result);
      return { eventId: event.id, trackingNumber: event.result.tracking_code, scans, estimatedDelivery };
    },
  };
}
