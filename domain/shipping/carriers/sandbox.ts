import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { estimatedDelivery } from '../calendar.ts';
import {
  CarrierError, PushRejectedError, SERVICE_LEVELS,
  type CarrierAdapter, type CarrierPush, type CarrierScan, type JourneyContext, type Label, type LabelRequest, type Parcel,
  type PostalPoint, type RateQuote, type RateRequest, type ServiceLevel, type TrackRequest, type TrackResult,
} from './types.ts';

/**
 * Sandbox carriers: three made-up carriers with their own rate tables, transit times, cut-offs,
 * pickup hours, limits and failure modes. Everything is a function of the inputs (no randomness,
 * no stored state), so two processes give the same answers and tests can predict them. The rate
 * formula and the test scenarios are documented in docs/shipping.md.
 */

export interface SandboxCarrierTable {
  name: string;
  /** Tracking numbers start with this. */
  prefix: string;
  currency: string;
  /** Per package, minor units. */
  base: Record<ServiceLevel, number>;
  /** Per billable kg, minor units. */
  perKg: Record<ServiceLevel, number>;
  /** Added per zone beyond zone 1, in basis points (600 = +6 % a zone). */
  zoneStepBp: number;
  /** Fuel surcharge on the whole, in basis points. */
  fuelBp: number;
  /** Business days in transit by service level, from the zone (1-8). */
  transitDays: Record<ServiceLevel, (zone: number) => number>;
  cutoff: string;
  pickupHours: { open: string; close: string };
  maxWeightKg: number;
  maxSideCm: number;
  maxPackages: number;
  /** Simulated answer time of every call, ms. */
  latencyMs: number;
}

export const SANDBOX_CARRIERS: readonly SandboxCarrierTable[] = [
  {
    name: 'parcelpoint', prefix: 'PP', currency: 'USD',
    base: { ground: 650, express: 1450, overnight: 2900 },
    perKg: { ground: 120, express: 260, overnight: 480 },
    zoneStepBp: 800, fuelBp: 750,
    transitDays: { ground: (z) => Math.min(7, 1 + z), express: (z) => 2 + Math.floor(z / 4), overnight: (z) => (z === 8 ? 2 : 1) },
    cutoff: '17:00', pickupHours: { open: '09:00', close: '17:00' },
    maxWeightKg: 30, maxSideCm: 150, maxPackages: 10, latencyMs: 15,
  },
  {
    name: 'swiftex', prefix: 'SX', currency: 'USD',
    base: { ground: 890, express: 1190, overnight: 2490 },
    perKg: { ground: 140, express: 210, overnight: 390 },
    zoneStepBp: 600, fuelBp: 1100,
    transitDays: { ground: (z) => 1 + Math.ceil(z * 0.8), express: (z) => 1 + Math.floor(z / 3), overnight: (z) => (z === 8 ? 2 : 1) },
    cutoff: '19:00', pickupHours: { open: '08:00', close: '20:00' },
    maxWeightKg: 50, maxSideCm: 200, maxPackages: 20, latencyMs: 30,
  },
  {
    name: 'cargoline', prefix: 'CL', currency: 'USD',
    base: { ground: 1100, express: 2100, overnight: 4200 },
    perKg: { ground: 80, express: 150, overnight: 300 },
    zoneStepBp: 400, fuelBp: 500,
    transitDays: { ground: (z) => 2 + z, express: (z) => (z === 8 ? 4 : 3), overnight: (z) => (z === 8 ? 3 : 1) },
    cutoff: '15:00', pickupHours: { open: '07:00', close: '15:00' },
    maxWeightKg: 70, maxSideCm: 300, maxPackages: 50, latencyMs: 45,
  },
];

export const SANDBOX_CARRIER_NAMES = SANDBOX_CARRIERS.map((c) => c.name);

/**
 * Magic destination postal codes (like Stripe's test cards): they make the sandbox fail in a
 * documented way, whatever else the request says.
 */
export const SANDBOX_POSTAL_CODES = {
  /** swiftex does not answer (holds the call, then times out). */
  swiftexTimeout: '99991',
  /** cargoline is down (answers 503). */
  cargolineDown: '99992',
  /** Every sandbox carrier rejects the destination address. */
  addressRejected: '99993',
} as const;

export const SANDBOX_SCENARIOS = ['delivered', 'delayed', 'exception', 'lost'] as const;
export type SandboxScenario = (typeof SANDBOX_SCENARIOS)[number];

/** How long a sandbox carrier in the timeout scenario holds a call before it gives up. */
export const SANDBOX_TIMEOUT_HOLD_MS = 10_000;

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/** Postal code → a number 0-999 (digits as a number, alphanumerics scaled from base 36). */
function postalKey(postal: string): number {
  const s = postal.toUpperCase().replace(/[^0-9A-Z]/g, '').slice(0, 3).padEnd(3, '0');
  if (/^\d{3}$/.test(s)) return Number(s);
  return Math.floor((parseInt(s, 36) / 36 ** 3) * 1000);
}

/** Zone 1-7 by postal-code distance within a country; 8 between countries. */
export function zoneOf(origin: PostalPoint, destination: PostalPoint): number {
  if (origin.country.toUpperCase() !== destination.country.toUpperCase()) return 8;
  const distance = Math.abs(postalKey(origin.postal_code) - postalKey(destination.postal_code));
  return 1 + Math.min(6, Math.floor(distance / 125));
}

/** Billable weight of one package in half-kg units: max(actual, L×W×H/5000), rounded up to 0.5 kg. */
export function billableHalfKilos(p: Parcel): number {
  const dim = p.dimensions ? (p.dimensions.length * p.dimensions.width * p.dimensions.height) / 5000 : 0;
  return Math.max(1, Math.ceil(Math.max(p.weight, dim) * 2 - 1e-9));
}

/** Integer division rounding half to even. */
function divHalfEven(n: bigint, d: bigint): bigint {
  const q = n / d;
  const r = n % d;
  const twice = 2n * r;
  if (twice > d || (twice === d && q % 2n === 1n)) return q + 1n;
  return q;
}

/**
 * The price in minor units: (base × packages + perKg × billable kg) × (1 + zoneStep × (zone − 1))
 * × (1 + fuel), rounded half-even once at the end (integers throughout).
 */
export function sandboxPrice(table: SandboxCarrierTable, level: ServiceLevel, zone: number, packages: Parcel[]): number {
  const halfKilos = packages.reduce((sum, p) => sum + billableHalfKilos(p), 0);
  const halfCents = BigInt(2 * table.base[level] * packages.length + table.perKg[level] * halfKilos);
  const zoneBp = BigInt(10_000 + table.zoneStepBp * (zone - 1));
  const fuelBp = BigInt(10_000 + table.fuelBp);
  return Number(divHalfEven(halfCents * zoneBp * fuelBp, 2n * 100_000_000n));
}

function digits(seed: string, n: number): string {
  const hex = createHash('sha256').update(seed).digest('hex');
  let out = '';
  for (let i = 0; out.length < n; i += 2) out += (parseInt(hex.slice(i % 64, (i % 64) + 2), 16) % 10).toString();
  return out;
}

export function sandboxPushSecret(carrier: string): string {
  return process.env[`SHIPPING_SANDBOX_PUSH_SECRET_${carrier.toUpperCase()}`] ?? `psk_test_${carrier}_sandbox_push_secret`;
}

/** The signature header of a sandbox push: `t=<unix seconds>,v1=<hex HMAC-SHA256 of "t.body">`. */
export function signSandboxPush(carrier: string, body: string, unixSeconds: number): string {
  const mac = createHmac('sha256', sandboxPushSecret(carrier)).update(`${unixSeconds}.${body}`).digest('hex');
  return `t=${unixSeconds},v1=${mac}`;
}

/** Five minutes either way, as Stripe allows. */
const PUSH_TOLERANCE_S = 300;

/**
 * A sandbox journey: the scans the carrier will have made, from the label to the end, for the
 * shipment's scenario. Times are fractions of the span from the label to the estimated delivery.
 */
export function sandboxJourney(trackingNumber: string, j: JourneyContext): CarrierScan[] {
  const start = Date.parse(j.labelAt);
  const eta = Date.parse(j.estimatedDelivery);
  const span = Math.max(eta - start, HOUR);
  const at = (f: number) => new Date(start + Math.round(span * f)).toISOString();
  const scan = (n: number, status: CarrierScan['status'], timestamp: string, location: string, description: string, extra: Partial<CarrierScan> = {}): CarrierScan => ({
    id: `${trackingNumber}-${n}`, status, timestamp, location, description, ...extra,
  });
  const origin = `${j.originCity} hub`;
  const dest = `${j.destinationCity} hub`;
  const first = [
    scan(1, 'picked_up', at(0.1), j.originCity, 'Picked up by the carrier'),
    scan(2, 'in_transit', at(0.3), origin, 'Departed origin facility'),
  ];
  switch (j.scenario as SandboxScenario) {
    case 'delayed': {
      const later = new Date(eta + DAY).toISOString();
      const newSpan = eta + DAY - start;
      const atNew = (f: number) => new Date(start + Math.round(newSpan * f)).toISOString();
      return [
        ...first,
        scan(3, 'in_transit', at(0.5), origin, 'Weather delay: the parcel missed its connection', { estimated_delivery: later }),
        scan(4, 'in_transit', atNew(0.7), dest, 'Arrived at destination facility'),
        scan(5, 'out_for_delivery', atNew(0.88), j.destinationCity, 'Out for delivery'),
        scan(6, 'delivered', atNew(0.95), j.destinationCity, 'Delivered'),
      ];
    }
    case 'exception':
      return [
        ...first,
        scan(3, 'exception', at(0.6), dest, 'Address problem: the recipient is unknown at the destination address'),
        scan(4, 'returned_to_sender', at(0.9), j.originCity, 'Returned to sender'),
      ];
    case 'lost':
      return [
        ...first,
        scan(3, 'exception', new Date(eta + 3 * DAY).toISOString(), origin, 'Lost in transit: the carrier closed its search'),
      ];
    default:
      return [
        ...first,
        scan(3, 'in_transit', at(0.6), dest, 'Arrived at destination facility'),
        scan(4, 'out_for_delivery', at(0.85), j.destinationCity, 'Out for delivery'),
        scan(5, 'delivered', at(0.95), j.destinationCity, 'Delivered'),
      ];
  }
}

export interface SandboxOptions {
  /** Carriers that answer every call with 503 (`SHIPPING_SANDBOX_DOWN`). */
  down?: readonly string[];
  /** Overrides the simulated latency of every sandbox carrier (ms). */
  latencyMs?: number;
  /** Overrides how long the timeout scenario holds a call (ms). */
  timeoutHoldMs?: number;
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (ms <= 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(timer);
      reject(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
    }, { once: true });
  });
}

export function createSandboxCarrier(table: SandboxCarrierTable, opts: SandboxOptions = {}): CarrierAdapter {
  const latency = opts.latencyMs ?? table.latencyMs;
  const hold = opts.timeoutHoldMs ?? SANDBOX_TIMEOUT_HOLD_MS;

  /** The failure modes, checked on every call that names a destination. */
  async function answer(destination: PostalPoint | null, signal?: AbortSignal): Promise<void> {
    await sleep(latency, signal);
    if (opts.down?.includes(table.name)) throw new CarrierError(table.name, 'carrier_unavailable', `${table.name} is down (503 Service Unavailable).`);
    if (!destination) return;
    const postal = destination.postal_code.trim();
    if (table.name === 'swiftex' && postal === SANDBOX_POSTAL_CODES.swiftexTimeout) {
      await sleep(hold, signal);
      throw new CarrierError(table.name, 'carrier_timeout', `${table.name} did not answer within ${hold} ms.`);
    }
    if (table.name === 'cargoline' && postal === SANDBOX_POSTAL_CODES.cargolineDown) {
      throw new CarrierError(table.name, 'carrier_unavailable', `${table.name} is down (503 Service Unavailable).`);
    }
    if (postal === SANDBOX_POSTAL_CODES.addressRejected) {
      throw new CarrierError(table.name, 'address_rejected', `${table.name} cannot deliver to postal code ${postal}: the address does not exist.`, { field: 'destination.postal_code' });
    }
  }

  function quote(req: { origin: PostalPoint; destination: PostalPoint; packages: Parcel[]; at: Date }, level: ServiceLevel): RateQuote {
    const zone = zoneOf(req.origin, req.destination);
    const days = table.transitDays[level](zone);
    return {
      carrier: table.name, service_level: level, amount: sandboxPrice(table, level, zone, req.packages), currency: table.currency,
      estimated_days: days, estimated_delivery: estimatedDelivery(req.at, table.cutoff, days).toISOString(),
    };
  }

  function checkLimits(packages: Parcel[]): void {
    if (packages.length > table.maxPackages) {
      throw new CarrierError(table.name, 'package_exceeds_limits', `${table.name} takes at most ${table.maxPackages} packages per shipment.`, { field: 'packages' });
    }
    packages.forEach((p, i) => {
      if (p.weight > table.maxWeightKg) {
        throw new CarrierError(table.name, 'package_exceeds_limits', `${table.name} takes packages of at most ${table.maxWeightKg} kg.`, { field: `packages.${i}.weight` });
      }
      const side = p.dimensions ? Math.max(p.dimensions.length, p.dimensions.width, p.dimensions.height) : 0;
      if (side > table.maxSideCm) {
        throw new CarrierError(table.name, 'package_exceeds_limits', `${table.name} takes packages of at most ${table.maxSideCm} cm on their longest side.`, { field: `packages.${i}.dimensions` });
      }
    });
  }

  const trackingNumberOf = (shipmentId: string) => `${table.prefix}${digits(`${table.name}:${shipmentId}`, 16)}`;

  return {
    name: table.name,
    kind: 'sandbox',
    serviceLevels: SERVICE_LEVELS,
    limits: { maxWeightKg: table.maxWeightKg, maxSideCm: table.maxSideCm, maxPackages: table.maxPackages },
    pickupHours: table.pickupHours,

    async rates(req: RateRequest): Promise<RateQuote[]> {
      await answer(req.destination, req.signal);
      checkLimits(req.packages);
      return (req.serviceLevels ?? SERVICE_LEVELS).map((level) => quote(req, level));
    },

    async buyLabel(req: LabelRequest): Promise<Label> {
      await answer(req.destination);
      checkLimits(req.packages);
      const trackingNumber = trackingNumberOf(req.shipmentId);
      return {
        trackingNumber,
        carrierReference: `${table.prefix.toLowerCase()}_shp_${digits(req.shipmentId, 12)}`,
        labelUrl: `https://labels.sandbox.business-platform.dev/${table.name}/${trackingNumber}.pdf`,
        rate: quote(req, req.serviceLevel),
      };
    },

    async voidLabel(): Promise<void> {
      await answer(null);
    },

    async schedulePickup(req) {
      await answer(null);
      return { confirmationNumber: `${table.prefix}P-${digits(req.pickupId, 8)}`, carrierReference: `${table.prefix.toLowerCase()}_pku_${digits(req.pickupId, 10)}` };
    },

    async cancelPickup(): Promise<void> {
      await answer(null);
    },

    async track(req: TrackRequest): Promise<TrackResult> {
      await answer(null);
      const all = sandboxJourney(req.trackingNumber, req.journey);
      const until = req.at.getTime();
      const scans = all.filter((s) => Date.parse(s.timestamp) <= until);
      let eta: string | null = req.journey.estimatedDelivery;
      for (const s of scans) if (s.estimated_delivery) eta = s.estimated_delivery;
      return { scans, estimatedDelivery: eta };
    },

    readPush(body: unknown, headers: Record<string, string | undefined>, now: Date): CarrierPush {
      const header = headers['bp-carrier-signature'];
      if (!header) throw new PushRejectedError('The push carries no Bp-Carrier-Signature header.');
      const parts = Object.fromEntries(header.split(',').map((kv) => kv.trim().split('=', 2) as [string, string]));
      const t = Number(parts.t);
      if (!Number.isInteger(t) || !parts.v1) throw new PushRejectedError('The Bp-Carrier-Signature header is malformed (expected t=<unix seconds>,v1=<hex>).');
      if (Math.abs(now.getTime() / 1000 - t) > PUSH_TOLERANCE_S) throw new PushRejectedError('The push\'s signature timestamp is more than 5 minutes away from now.');
      const expected = signSandboxPush(table.name, JSON.stringify(body), t).split('v1=')[1]!;
      const a = Buffer.from(parts.v1, 'utf8');
      const b = Buffer.from(expected, 'utf8');
      if (a.length !== b.length || !timingSafeEqual(a, b)) throw new PushRejectedError(`The push's signature does not verify with ${table.name}'s secret.`);
      const push = body as { id: string; tracking_number: string; estimated_delivery?: string | null; scans: CarrierScan[] };
      return { eventId: push.id, trackingNumber: push.tracking_number, scans: push.scans, estimatedDelivery: push.estimated_delivery ?? null };
    },
  };
}
