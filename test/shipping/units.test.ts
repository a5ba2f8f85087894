import { describe, expect, it } from 'vitest';
import { addBusinessDays, estimatedDelivery, shipDay } from '../../domain/shipping/calendar.ts';
import { serviceLevelOf } from '../../domain/shipping/carriers/easypost.ts';
import {
  SANDBOX_CARRIERS, billableHalfKilos, createSandboxCarrier, sandboxJourney, sandboxPrice, signSandboxPush, zoneOf,
} from '../../domain/shipping/carriers/sandbox.ts';
import type { CarrierScan } from '../../domain/shipping/carriers/types.ts';
import { markComparison } from '../../domain/shipping/shipments.ts';
import { absorbScans } from '../../workflows/shipping/shipment.ts';
import type { ShipmentWorkflowState } from '../../workflows/shipping/shared.ts';

const parcelpoint = SANDBOX_CARRIERS.find((c) => c.name === 'parcelpoint')!;

describe('sandbox rate tables', () => {
  it('zones by postal distance within a country, 8 between countries', () => {
    expect(zoneOf({ country: 'US', postal_code: '07102' }, { country: 'US', postal_code: '07030' })).toBe(1);
    expect(zoneOf({ country: 'US', postal_code: '07102' }, { country: 'US', postal_code: '62701' })).toBe(5);
    expect(zoneOf({ country: 'US', postal_code: '00501' }, { country: 'US', postal_code: '99950' })).toBe(7);
    expect(zoneOf({ country: 'US', postal_code: '07102' }, { country: 'GB', postal_code: 'SW1Y 4JH' })).toBe(8);
  });

  it('bills the larger of actual and dimensional weight (L×W×H/5000), in half kilos rounded up', () => {
    expect(billableHalfKilos({ weight: 2 })).toBe(4);
    expect(billableHalfKilos({ weight: 2.1 })).toBe(5);
    expect(billableHalfKilos({ weight: 1, dimensions: { length: 50, width: 40, height: 30 } })).toBe(24);
    expect(billableHalfKilos({ weight: 0.01 })).toBe(1);
  });

  it('prices in integers, rounding half-even once', () => {
    expect(sandboxPrice(parcelpoint, 'ground', 5, [{ weight: 2 }])).toBe(1263);
    expect(sandboxPrice(parcelpoint, 'ground', 1, [{ weight: 2 }, { weight: 2 }])).toBe(Math.round((1300 + 480) * 1.075));
    const a = sandboxPrice(parcelpoint, 'overnight', 3, [{ weight: 7.3 }]);
    expect(Number.isInteger(a)).toBe(true);
    expect(a).toBe(sandboxPrice(parcelpoint, 'overnight', 3, [{ weight: 7.3 }]));
  });

  it('ships the same business day before the cut-off, else the next one; ETA at 20:00 UTC', () => {
    expect(shipDay(new Date('2025-03-03T16:59:00Z'), '17:00').toISOString()).toBe('2025-03-03T00:00:00.000Z');
    expect(shipDay(new Date('2025-03-03T17:00:00Z'), '17:00').toISOString()).toBe('2025-03-04T00:00:00.000Z');
    expect(shipDay(new Date('2025-03-07T18:00:00Z'), '17:00').toISOString()).toBe('2025-03-10T00:00:00.000Z'); // Friday late → Monday
    expect(addBusinessDays(new Date('2025-03-07T00:00:00Z'), 1).toISOString()).toBe('2025-03-10T00:00:00.000Z');
    expect(estimatedDelivery(new Date('2025-03-03T10:00:00Z'), '17:00', 6).toISOString()).toBe('2025-03-11T20:00:00.000Z');
  });

  it('is deterministic and fails as documented', async () => {
    const carrier = createSandboxCarrier(parcelpoint, { latencyMs: 0 });
    const ask = { origin: { country: 'US', postal_code: '07102' }, destination: { country: 'US', postal_code: '62701' }, packages: [{ weight: 2 }], at: new Date('2025-03-03T10:00:00Z') };
    expect(await carrier.rates(ask)).toEqual(await carrier.rates(ask));
    await expect(carrier.rates({ ...ask, destination: { country: 'US', postal_code: '99993' } })).rejects.toMatchObject({ code: 'address_rejected', field: 'destination.postal_code' });
    await expect(createSandboxCarrier(parcelpoint, { latencyMs: 0, down: ['parcelpoint'] }).rates(ask)).rejects.toMatchObject({ code: 'carrier_unavailable', retryable: true });
    const swiftex = createSandboxCarrier(SANDBOX_CARRIERS.find((c) => c.name === 'swiftex')!, { latencyMs: 0, timeoutHoldMs: 20 });
    await expect(swiftex.rates({ ...ask, destination: { country: 'US', postal_code: '99991' } })).rejects.toMatchObject({ code: 'carrier_timeout' });
    await expect(carrier.rates({ ...ask, packages: [{ weight: 31 }] })).rejects.toMatchObject({ code: 'package_exceeds_limits', field: 'packages.0.weight' });
  });

  it('verifies push signatures: right secret and body only, within 5 minutes', () => {
    const carrier = createSandboxCarrier(parcelpoint, { latencyMs: 0 });
    const body = { id: 'cev_1', tracking_number: 'PP1', scans: [] };
    const now = new Date('2025-03-03T10:00:00Z');
    const t = Math.floor(now.getTime() / 1000);
    expect(carrier.readPush(body, { 'bp-carrier-signature': signSandboxPush('parcelpoint', JSON.stringify(body), t) }, now).eventId).toBe('cev_1');
    expect(() => carrier.readPush({ ...body, id: 'cev_2' }, { 'bp-carrier-signature': signSandboxPush('parcelpoint', JSON.stringify(body), t) }, now)).toThrow(/does not verify/);
    expect(() => carrier.readPush(body, { 'bp-carrier-signature': signSandboxPush('swiftex', JSON.stringify(body), t) }, now)).toThrow(/does not verify/);
    expect(() => carrier.readPush(body, { 'bp-carrier-signature': signSandboxPush('parcelpoint', JSON.stringify(body), t - 301) }, now)).toThrow(/5 minutes/);
    expect(() => carrier.readPush(body, {}, now)).toThrow(/no Bp-Carrier-Signature/);
  });

  it('journeys end within the ETA for delivered, one day later for delayed', () => {
    const j = { labelAt: '2025-03-03T10:00:00.000Z', estimatedDelivery: '2025-03-11T20:00:00.000Z', scenario: 'delivered', originCity: 'A', destinationCity: 'B' };
    const delivered = sandboxJourney('PP1', j);
    expect(delivered.at(-1)!.status).toBe('delivered');
    expect(delivered.at(-1)!.timestamp < j.estimatedDelivery).toBe(true);
    const delayed = sandboxJourney('PP1', { ...j, scenario: 'delayed' });
    expect(delayed.filter((s) => s.estimated_delivery)).toHaveLength(1);
    expect(delayed.at(-1)!.timestamp > j.estimatedDelivery && delayed.at(-1)!.timestamp < '2025-03-12T20:00:00.000Z').toBe(true);
  });
});

describe('absorbing scans (the shipment workflow\'s rule)', () => {
  const start = (): ShipmentWorkflowState => ({
    status: 'label_created', statusAt: '2025-03-03T10:00:00Z', rank: 1, label: null, estimatedDelivery: null, seen: [],
    carrierNow: '2025-03-03T10:00:00Z', journeyStartedAt: 0, factor: 1, pickupId: null, adminActions: 0, progressSeq: 0,
  });
  const scan = (id: string, status: CarrierScan['status'], timestamp: string): CarrierScan => ({ id, status, timestamp, location: 'x', description: 'x' });

  it('never moves backwards, ignores repeats, sorts what arrives together', () => {
    const s = start();
    expect(absorbScans(s, [scan('b', 'in_transit', '2025-03-05T00:00:00Z'), scan('a', 'picked_up', '2025-03-04T00:00:00Z')]).entered).toEqual(['picked_up', 'in_transit']);
    expect(absorbScans(s, [scan('a', 'picked_up', '2025-03-04T00:00:00Z')])).toEqual({ fresh: [], entered: [] });
    expect(absorbScans(s, [scan('c', 'picked_up', '2025-03-04T06:00:00Z')]).entered).toEqual([]);
    expect(s.status).toBe('in_transit');
    // An exception older than the current status is history, not the present.
    expect(absorbScans(s, [scan('d', 'exception', '2025-03-04T12:00:00Z')]).entered).toEqual([]);
    expect(absorbScans(s, [scan('e', 'exception', '2025-03-06T00:00:00Z')]).entered).toEqual(['exception']);
    // Recovery from an exception by a later scan; then delivered is final.
    expect(absorbScans(s, [scan('f', 'in_transit', '2025-03-06T06:00:00Z'), scan('g', 'delivered', '2025-03-07T00:00:00Z')]).entered).toEqual(['in_transit', 'delivered']);
    expect(absorbScans(s, [scan('h', 'exception', '2025-03-08T00:00:00Z'), scan('i', 'returned_to_sender', '2025-03-09T00:00:00Z')]).entered).toEqual([]);
    expect(s).toMatchObject({ status: 'delivered', rank: 5 });
    expect(s.seen).toHaveLength(9);
  });
});

describe('comparison and EasyPost service levels', () => {
  it('marks the first as cheapest and the earliest delivery (cheaper on a tie) as fastest', () => {
    const r = (carrier: string, amount: number, eta: string) => ({ carrier, service_level: 'ground' as const, amount, currency: 'USD', estimated_days: 1, estimated_delivery: eta });
    const marked = markComparison([r('a', 100, '2025-03-10'), r('b', 200, '2025-03-05'), r('c', 150, '2025-03-05')], []);
    expect(marked.rates.map((x) => [x.carrier, x.cheapest, x.fastest])).toEqual([['a', true, false], ['b', false, false], ['c', false, true]]);
  });

  it('maps EasyPost services to levels by name, else by delivery days', () => {
    expect(serviceLevelOf({ service: 'Express', delivery_days: 1 })).toBe('overnight');
    expect(serviceLevelOf({ service: 'Priority', delivery_days: 2 })).toBe('express');
    expect(serviceLevelOf({ service: 'GroundAdvantage', delivery_days: 5 })).toBe('ground');
    expect(serviceLevelOf({ service: 'FEDEX_2_DAY', delivery_days: null })).toBe('express');
    expect(serviceLevelOf({ service: 'STANDARD_OVERNIGHT', delivery_days: null })).toBe('overnight');
    expect(serviceLevelOf({ service: 'SomethingNew', delivery_days: 1 })).toBe('overnight');
  });
});
