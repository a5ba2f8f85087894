import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { WorkflowNotFoundError, WorkflowUpdateFailedError } from '@temporalio/client';
import { ApiError, conflict, notFound, validationFailed, type FieldError } from '../../platform/errors.ts';
import { failureToProblem, searchAttributes, sendUpdate, startResource } from '../../platform/temporal-kit.ts';
import type { TemporalHandle } from '../../platform/temporal.ts';
import type { shipmentWorkflow } from '../../workflows/shipping/shipment.ts';
import {
  advanceShipmentClockUpdate, cancelShipmentUpdate, shipmentCreatedUpdate, shipmentWorkflowId,
  type JourneyClock, type ShipmentWorkflowInput,
} from '../../workflows/shipping/shared.ts';
import { findOrder } from '../commerce/public.ts';
import type { Scope } from '../scope.ts';
import { readScopedOr404, scopeColumns } from '../scope.ts';
import type { CarrierAdapters } from './carriers/index.ts';
import { SANDBOX_SCENARIOS } from './carriers/sandbox.ts';
import { CarrierError, TERMINAL_STATUSES, type CarrierAdapter, type Parcel, type RateQuote, type ServiceLevel, type ShippingAddress } from './carriers/types.ts';
import { Shipment, ShippingCarrierSetting, ShippingTestClock } from './entities.ts';
import { carrierProblem } from './problems.ts';
import type { RateComparisonView, ShipmentView, ShippingTestClockView } from './schemas.ts';
import { clockView, findShipment, findShipmentByRequestKey, shipmentView } from './service.ts';

/**
 * Shipments as the API sees them: checked here (422/404/409 before anything starts), created by
 * their workflow (update-with-start: the workflow buys the label and writes the row; the API never
 * writes a shipment row), cancelled by an update, and rates asked of every carrier in parallel.
 */
export interface ShippingContext {
  em: EntityManager;
  temporal: TemporalHandle;
  carriers: CarrierAdapters;
}

export interface CreateShipmentInput {
  order_id: string;
  origin: ShippingAddress;
  destination: ShippingAddress;
  packages: Parcel[];
  service_level: ServiceLevel;
  carrier?: string | undefined;
  test_clock?: string | undefined;
  metadata?: Record<string, string> | undefined;
}

/** Checks packages against a carrier's limits, as field errors. */
export function limitProblems(carrier: CarrierAdapter, packages: Parcel[]): FieldError[] {
  const errors: FieldError[] = [];
  if (packages.length > carrier.limits.maxPackages) {
    errors.push({ path: 'packages', message: `${carrier.name} takes at most ${carrier.limits.maxPackages} package${carrier.limits.maxPackages === 1 ? '' : 's'} per shipment` });
  }
  packages.forEach((p, i) => {
    if (p.weight > carrier.limits.maxWeightKg) errors.push({ path: `packages.${i}.weight`, message: `${carrier.name} takes packages of at most ${carrier.limits.maxWeightKg} kg` });
    const side = p.dimensions ? Math.max(p.dimensions.length, p.dimensions.width, p.dimensions.height) : 0;
    if (side > carrier.limits.maxSideCm) errors.push({ path: `packages.${i}.dimensions`, message: `${carrier.name} takes packages of at most ${carrier.limits.maxSideCm} cm on their longest side` });
  });
  return errors;
}

async function carrierSetting(em: EntityManager, scope: Scope): Promise<ShippingCarrierSetting | null> {
  return em.fork().findOne(ShippingCarrierSetting, { accountId: scope.accountId, livemode: scope.livemode });
}

/** The carriers this account may use in this mode: the server's usable ones, narrowed by the account's setting. */
export async function accountCarriers(ctx: ShippingContext, scope: Scope): Promise<{ names: string[]; defaultCarrier: string | null }> {
  const usable = ctx.carriers.usable(scope.livemode);
  const setting = await carrierSetting(ctx.em, scope);
  const names = setting?.enabledCarriers ? usable.filter((n) => setting.enabledCarriers!.includes(n)) : usable;
  return { names, defaultCarrier: setting?.defaultCarrier && names.includes(setting.defaultCarrier) ? setting.defaultCarrier : null };
}

function noCarrier(scope: Scope): ApiError {
  return new ApiError({
    status: 503, code: 'carrier_not_configured', title: 'Service Unavailable',
    detail: scope.livemode ? 'No live carrier is configured for this account on this server.' : 'No carrier is configured for this account.',
    suggestion: 'Configure a carrier (EASYPOST_API_KEY on the server, or the account\'s carriers through the admin API), then retry.',
    headers: { 'Retry-After': '60' },
  });
}

export async function setCarrierSetting(em: EntityManager, accountId: string, livemode: boolean, value: { defaultCarrier: string | null; enabledCarriers: string[] | null }): Promise<void> {
  await em.upsert(ShippingCarrierSetting, { accountId, livemode, defaultCarrier: value.defaultCarrier, enabledCarriers: value.enabledCarriers, updatedAt: new Date() });
}

/**
 * Creates a shipment for an order: checks the order (404 for an unknown one or another account's,
 * 409 unless processing), the carrier and its limits, the test clock and the sandbox scenario, then
 * starts `shipment-<id>` with the `shipmentCreated` update, which answers once the label is bought
 * and the row written (or with the carrier's refusal, nothing written).
 */
export async function createShipment(
  ctx: ShippingContext, scope: Scope, input: CreateShipmentInput, shipmentId: string, request: { requestId: string; idempotencyKey: string | null },
): Promise<ShipmentView> {
  if (request.idempotencyKey) {
    const existing = await findShipmentByRequestKey(ctx.em, request.idempotencyKey);
    if (existing) return existing;
  }
  const existing = await ctx.em.findOne(Shipment, { id: shipmentId });
  if (existing) return shipmentView(existing);

  const order = await findOrder(ctx.em, input.order_id).catch((err: unknown) => {
    if (err instanceof ApiError && err.status === 404) throw notFound('order', input.order_id);
    throw err;
  });
  if (order.status !== 'processing') {
    throw conflict('invalid_state_transition', `Order ${order.id} is ${order.status}; only a processing order can be shipped.`,
      'Ship an order while it is processing (not fulfilled or canceled).', { current_state: order.status });
  }

  const errors: FieldError[] = [];
  const { names, defaultCarrier } = await accountCarriers(ctx, scope);
  if (!names.length) throw noCarrier(scope);
  let carrierName = input.carrier ?? defaultCarrier;
  if (carrierName && !names.includes(carrierName)) {
    errors.push({ path: 'carrier', message: `carrier '${carrierName}' is not available to this account in ${scope.livemode ? 'live' : 'test'} mode; use one of ${names.join(', ')}` });
    carrierName = null;
  }

  let clock: ShippingTestClock | null = null;
  if (input.test_clock !== undefined) {
    clock = await ctx.em.findOne(ShippingTestClock, { id: input.test_clock });
    if (!clock) errors.push({ path: 'test_clock', message: `no shipping test clock '${input.test_clock}' exists in this account and mode (POST /v3/shipping/test_clocks creates one)` });
  }
  const scenario = input.metadata?.sandbox_scenario ?? 'delivered';
  if (!(SANDBOX_SCENARIOS as readonly string[]).includes(scenario)) {
    errors.push({ path: 'metadata.sandbox_scenario', message: `unknown sandbox scenario '${scenario}'; use one of ${SANDBOX_SCENARIOS.join(', ')}` });
  }
  if (errors.length) throw validationFailed(errors);

  const labelAt = clock ? clock.frozenTime : new Date();
  // No carrier named and no account default: the cheapest carrier that offers the service level.
  if (!carrierName) carrierName = await cheapestCarrier(ctx, names, input, labelAt);
  const carrier = ctx.carriers.get(carrierName);
  const limits = limitProblems(carrier, input.packages);
  if (!carrier.serviceLevels.includes(input.service_level)) limits.push({ path: 'service_level', message: `${carrier.name} does not offer ${input.service_level}` });
  if (clock && carrier.kind !== 'sandbox') limits.push({ path: 'test_clock', message: `test clocks drive sandbox carriers only; ${carrier.name} runs in real time` });
  if (limits.length) throw validationFailed(limits);

  const config = ctx.carriers.config;
  const journeyClock: JourneyClock = clock
    ? { kind: 'test_clock', clockId: clock.id }
    : carrier.kind === 'sandbox'
      ? { kind: 'compressed', pollMs: Math.max(50, Math.round(config.SHIPPING_SANDBOX_JOURNEY_MS / 30)) }
      : { kind: 'real', pollMs: config.SHIPPING_POLL_INTERVAL_MS };
  const workflowInput: ShipmentWorkflowInput = {
    shipmentId, accountId: scope.accountId, livemode: scope.livemode, orderId: order.id, customerId: order.customerId,
    carrier: carrier.name, serviceLevel: input.service_level, origin: input.origin, destination: input.destination, packages: input.packages,
    scenario: carrier.kind === 'sandbox' ? scenario : 'live', testClockId: clock?.id ?? null, clock: journeyClock, labelAt: labelAt.toISOString(),
    metadata: input.metadata ?? {}, requestIdempotencyKey: request.idempotencyKey, requestId: request.requestId,
    journeyMs: config.SHIPPING_SANDBOX_JOURNEY_MS,
  };
  try {
    return await startResource<typeof shipmentWorkflow, ShipmentView, []>(ctx.temporal, {
      workflowType: 'shipmentWorkflow',
      workflowId: shipmentWorkflowId(shipmentId),
      taskQueue: ctx.temporal.taskQueue('shipping'),
      args: [workflowInput],
      searchAttributes: searchAttributes({ accountId: scope.accountId, livemode: scope.livemode, customerId: order.customerId, resourceId: shipmentId, status: 'pending' }),
      update: shipmentCreatedUpdate,
      updateArgs: [],
    });
  } catch (err) {
    if (err instanceof WorkflowUpdateFailedError && request.idempotencyKey) {
      const again = await findShipmentByRequestKey(ctx.em.fork(), request.idempotencyKey);
      if (again) return again;
    }
    throw (await failureToProblem(err, {
      resource: `Shipment ${shipmentId}`,
      suggestion: 'Check the addresses and packages, then send the request again.',
      currentState: async () => 'pending',
    })) ?? err;
  }
}

async function cheapestCarrier(ctx: ShippingContext, names: string[], input: CreateShipmentInput, at: Date): Promise<string> {
  const { rates } = await askCarriers(ctx, names, { origin: input.origin, destination: input.destination, packages: input.packages, serviceLevels: [input.service_level], at });
  const best = rates.find((r) => r.service_level === input.service_level);
  if (!best) {
    throw new ApiError({
      status: 503, code: 'carrier_unavailable', title: 'Service Unavailable',
      detail: `No carrier quoted ${input.service_level} for this shipment just now.`,
      suggestion: 'Name a carrier in `carrier`, or retry in a minute.', headers: { 'Retry-After': '30' },
    });
  }
  return best.carrier;
}

export async function cancelShipment(ctx: ShippingContext, id: string, requestId: string): Promise<ShipmentView> {
  const s = await findShipment(ctx.em, id);
  const handle = ctx.temporal.client.workflow.getHandle<typeof shipmentWorkflow>(s.workflowId);
  if (TERMINAL_STATUSES.includes(s.status)) {
    throw conflict('invalid_state_transition', `Shipment ${s.id} is ${s.status}; it can no longer be cancelled.`,
      'A shipment can be cancelled only before pickup (status label_created).', { current_state: s.status });
  }
  return sendUpdate(() => handle.executeUpdate(cancelShipmentUpdate, { args: [{ requestId }] }), {
    resource: `Shipment ${s.id}`,
    suggestion: 'A shipment can be cancelled only before pickup (status label_created).',
    currentState: async () => (await findShipment(ctx.em.fork(), id)).status,
  });
}

export interface RateAsk {
  origin: { country: string; postal_code: string };
  destination: { country: string; postal_code: string };
  packages: Parcel[];
  serviceLevels?: readonly ServiceLevel[] | undefined;
  at: Date;
}

/**
 * Asks every named carrier in parallel, each with its own timeout: a carrier that fails or is
 * late is an entry in `errors`, never a failure of the whole call. Rates sorted by amount.
 */
export async function askCarriers(ctx: ShippingContext, names: string[], ask: RateAsk): Promise<{ rates: RateQuote[]; errors: { carrier: string; code: string; message: string }[] }> {
  const timeoutMs = ctx.carriers.config.SHIPPING_COMPARE_TIMEOUT_MS;
  const results = await Promise.all(names.map(async (name) => {
    const carrier = ctx.carriers.get(name);
    const limits = limitProblems(carrier, ask.packages);
    if (limits.length) return { name, error: { code: 'package_exceeds_limits', message: limits.map((l) => `${l.path}: ${l.message}`).join('; ') } };
    const abort = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const err = new CarrierError(name, 'carrier_timeout', `${name} did not answer within ${timeoutMs} ms.`);
        abort.abort(err);
        reject(err);
      }, timeoutMs);
    });
    try {
      const rates = await Promise.race([carrier.rates({ ...ask, signal: abort.signal }), timeout]);
      return { name, rates };
    } catch (err) {
      if (err instanceof CarrierError) return { name, error: { code: err.code, message: err.message } };
      return { name, error: { code: 'carrier_error', message: `${name} failed: ${(err as Error).message}` } };
    } finally {
      clearTimeout(timer);
    }
  }));
  const rates = results.flatMap((r) => ('rates' in r ? r.rates ?? [] : []))
    .sort((a, b) => a.amount - b.amount || a.estimated_delivery.localeCompare(b.estimated_delivery) || a.carrier.localeCompare(b.carrier));
  const errors = results.flatMap((r) => ('error' in r && r.error ? [{ carrier: r.name, ...r.error }] : []));
  return { rates, errors };
}

/** Rates of the account's carriers (or those named), cheapest first. Every carrier failing is 503. */
export async function quoteRates(ctx: ShippingContext, scope: Scope, ask: RateAsk, only?: string[]): Promise<{ rates: RateQuote[]; errors: { carrier: string; code: string; message: string }[] }> {
  const { names } = await accountCarriers(ctx, scope);
  if (!names.length) throw noCarrier(scope);
  if (only) {
    const unknown = only.map((n, i) => [n, i] as const).filter(([n]) => !names.includes(n));
    if (unknown.length) {
      throw validationFailed(unknown.map(([n, i]) => ({ path: `carriers.${i}`, message: `carrier '${n}' is not available to this account; use one of ${names.join(', ')}` })));
    }
  }
  const result = await askCarriers(ctx, only ?? names, ask);
  if (!result.rates.length && result.errors.length && result.errors.every((e) => e.code === 'carrier_unavailable' || e.code === 'carrier_timeout')) {
    throw new ApiError({
      status: 503, code: 'carrier_unavailable', title: 'Service Unavailable', detail: 'No carrier answered.',
      suggestion: 'Retry in a minute.', headers: { 'Retry-After': '30' }, extensions: { carrier_errors: result.errors },
    });
  }
  if (!result.rates.length && result.errors.length) {
    const first = result.errors[0]!;
    throw carrierProblem(new CarrierError(first.carrier, first.code as 'address_rejected', first.message, { field: first.code === 'address_rejected' ? 'destination.postal_code' : 'packages' }));
  }
  return result;
}

/** Marks the cheapest and the fastest (earliest delivery; the cheaper on a tie) of a comparison. */
export function markComparison(rates: RateQuote[], errors: RateComparisonView['errors']): RateComparisonView {
  let fastest = -1;
  rates.forEach((r, i) => {
    if (fastest < 0) fastest = i;
    else {
      const best = rates[fastest]!;
      if (r.estimated_delivery < best.estimated_delivery || (r.estimated_delivery === best.estimated_delivery && r.amount < best.amount)) fastest = i;
    }
  });
  return {
    object: 'rate_comparison',
    rates: rates.map((r, i) => ({ ...r, cheapest: i === 0, fastest: i === fastest })),
    errors,
  };
}

// Test clocks -----------------------------------------------------------------------------------

function requireSandbox(scope: Scope): void {
  if (scope.livemode) {
    throw new ApiError({
      status: 403, code: 'test_mode_only', title: 'Forbidden', detail: 'Shipping test clocks exist only in test mode.',
      suggestion: 'Use a test key (bp_test_… or bp_rk_test_…).',
    });
  }
}

export async function createTestClock(em: EntityManager, scope: Scope, id: string, input: { frozenTime: Date; name: string | null }): Promise<ShippingTestClockView> {
  requireSandbox(scope);
  const existing = await em.findOne(ShippingTestClock, { id });
  if (existing) return clockView(existing);
  const clock = em.create(ShippingTestClock, { id, ...scopeColumns(scope), name: input.name, frozenTime: input.frozenTime, status: 'ready', createdAt: new Date() });
  await em.flush();
  return clockView(clock);
}

/** A live key finds no clock (clocks are test-mode records): 404, like any other unknown id. */
/** A shipping test clock by id for GET /v3/shipping/test_clocks/{id}: one prepared statement, no EntityManager (readScopedOr404). */
export async function readTestClock(orm: MikroORM, scope: Scope, id: string): Promise<ShippingTestClockView> {
  return clockView(await readScopedOr404(orm, scope, ShippingTestClock, id, 'shipping test clock'));
}

/**
 * Moves a test clock forward: every shipment on it that is still travelling catches up to the new
 * time (an update each, answered once it has polled its carrier and recorded what happened), then
 * the clock is `ready` at the new time.
 */
export async function advanceTestClock(ctx: ShippingContext, id: string, to: Date): Promise<ShippingTestClockView> {
  const clock = await ctx.em.findOne(ShippingTestClock, { id });
  if (!clock) throw notFound('shipping test clock', id);
  if (to.getTime() <= clock.frozenTime.getTime()) {
    throw validationFailed([{ path: 'frozen_time', message: `must be later than the clock's current time ${clock.frozenTime.toISOString()}` }]);
  }
  clock.status = 'advancing';
  await ctx.em.flush();
  const shipments = await ctx.em.find(Shipment, { testClockId: id, status: { $nin: [...TERMINAL_STATUSES] } }, { fields: ['id', 'workflowId'] });
  const now = to.toISOString();
  for (let i = 0; i < shipments.length; i += 10) {
    await Promise.all(shipments.slice(i, i + 10).map(async (s) => {
      try {
        await ctx.temporal.client.workflow.getHandle(s.workflowId).executeUpdate(advanceShipmentClockUpdate, { args: [{ now }] });
      } catch (err) {
        // Finished between the read and the update (delivered, cancelled): nothing to move.
        if (err instanceof WorkflowNotFoundError || err instanceof WorkflowUpdateFailedError) return;
        throw err;
      }
    }));
  }
  clock.frozenTime = to;
  clock.status = 'ready';
  await ctx.em.flush();
  return clockView(clock);
}
