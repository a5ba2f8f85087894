import {
  ActivityFailure, ApplicationFailure, allHandlersFinished, condition, log, proxyActivities, setHandler, workflowInfo,
} from '@temporalio/workflow';
import type { ShippingActivities } from '../../activities/shipping/index.ts';
import type { CarrierScan, ShipmentStatus } from '../../domain/shipping/carriers/types.ts';
import type { Slip } from '../../domain/shipping/service.ts';
import { REFUSALS, refuse } from '../kit/failures.ts';
import { Mutex, continueAsNewDue, continueAsNewWhenSuggested } from '../kit/entity.ts';
import { recordStatus } from '../kit/search-attributes.ts';
import {
  CARRIER_STEPS, DB_STEPS, LABEL_STEP,
  advanceShipmentClockUpdate, cancelShipmentUpdate, carrierScansSignal, pickupChangedSignal, shipmentCreatedUpdate,
  shipmentStateQuery, steerShipmentUpdate,
  type CarrierScansInput, type ShipmentView, type ShipmentWorkflowInput, type ShipmentWorkflowState,
} from './shared.ts';

const db = proxyActivities<ShippingActivities>(DB_STEPS);
const label = proxyActivities<ShippingActivities>(LABEL_STEP);
const carrier = proxyActivities<ShippingActivities>(CARRIER_STEPS);

const DAY = 86_400_000;
/** After an exception with no further scan for this long (carrier time), the journey is over. */
const EXCEPTION_HORIZON_MS = 14 * DAY;

/** The main statuses in order, and the terminal ones (as domain/shipping/carriers/types.ts lists them; workflows take no values from the domain). */
const MAIN_STATUSES: readonly ShipmentStatus[] = ['pending', 'label_created', 'picked_up', 'in_transit', 'out_for_delivery', 'delivered'];
const TERMINAL_STATUSES: readonly ShipmentStatus[] = ['delivered', 'returned_to_sender', 'cancelled'];
const rankOf = (s: ShipmentStatus): number => MAIN_STATUSES.indexOf(s);
const isTerminal = (s: ShipmentStatus) => TERMINAL_STATUSES.includes(s);

/**
 * Folds scans into the state: a status never moves backwards (a main status only forwards, an
 * exception only from a scan not older than the current status, and nothing after a terminal
 * status); scans already seen change nothing. Returns the statuses entered, in order.
 */
export function absorbScans(state: ShipmentWorkflowState, scans: CarrierScan[]): { fresh: CarrierScan[]; entered: ShipmentStatus[] } {
  const seen = new Set(state.seen);
  const fresh = scans.filter((s) => !seen.has(s.id));
  const entered: ShipmentStatus[] = [];
  const sorted = [...fresh].sort((a, b) => Date.parse(a.timestamp) - Date.parse(b.timestamp));
  for (const scan of sorted) {
    seen.add(scan.id);
    if (isTerminal(state.status)) continue;
    const at = Date.parse(scan.timestamp);
    const notOlder = at >= Date.parse(state.statusAt);
    let next: ShipmentStatus | null = null;
    const rank = rankOf(scan.status);
    if (rank >= 0) {
      if (rank > state.rank || (state.status === 'exception' && rank >= state.rank && rank > 1 && notOlder)) next = scan.status;
    } else if (scan.status === 'exception' || scan.status === 'returned_to_sender') {
      if (notOlder && state.status !== scan.status) next = scan.status;
    }
    if (!next) continue;
    state.status = next;
    state.statusAt = scan.timestamp;
    if (rank >= 0) state.rank = Math.max(state.rank, rank);
    entered.push(next);
  }
  state.seen = [...seen];
  return { fresh, entered };
}

/**
 * One shipment's journey (`shipment-shp_…`). The API starts it with the `shipmentCreated` update
 * (update-with-start): the carrier sells the label, the row and `shipment.created` are written, the
 * update answers with the shipment (or the carrier's refusal: nothing is written). Then the order
 * shows the tracking number (through the order workflow), and the workflow follows the carrier:
 * polling on a timer (or on each test-clock advance) and taking pushed scans by signal, until the
 * shipment is delivered, returned or cancelled. It keeps `estimated_delivery`: a later ETA from the
 * carrier, or the ETA passing without delivery, is one slip, recorded once with
 * `order.fulfillment.delayed`. Once every shipment of the order is delivered, the order is fulfilled.
 */
export async function shipmentWorkflow(input: ShipmentWorkflowInput): Promise<void> {
  const ref = { shipmentId: input.shipmentId, accountId: input.accountId, livemode: input.livemode };
  const state: ShipmentWorkflowState = input.resume ?? {
    status: 'pending', statusAt: input.labelAt, rank: 0, label: null, estimatedDelivery: null, seen: [],
    carrierNow: input.labelAt, journeyStartedAt: Date.now(), factor: 1, pickupId: null, adminActions: 0, progressSeq: 0,
  };
  const mutex = new Mutex();
  const pushes: CarrierScansInput[] = [];
  let repoll = false;
  let clockMoved = false;
  let created: ShipmentView | undefined;
  let rejected: ApplicationFailure | undefined;
  let cancelled = false;

  setHandler(shipmentStateQuery, () => ({ ...state, seen: [...state.seen] }));
  setHandler(shipmentCreatedUpdate, async () => {
    await condition(() => created !== undefined || rejected !== undefined || state.label !== null);
    if (rejected) throw rejected;
    return created ?? (await db.getShipment(ref));
  });
  setHandler(carrierScansSignal, (push) => {
    pushes.push(push);
  });
  setHandler(pickupChangedSignal, ({ pickupId }) => {
    state.pickupId = pickupId;
  });

  /** Carrier time now: the clock's, the compressed journey's, or the workflow's own. */
  const carrierNow = (): number => {
    const clock = input.clock;
    if (clock.kind === 'test_clock') return Date.parse(state.carrierNow);
    if (clock.kind === 'compressed') return Date.parse(input.labelAt) + (Date.now() - state.journeyStartedAt) * state.factor;
    return Date.now();
  };

  /** Takes in scans and the carrier's ETA, checks the ETA against carrier time, and records what changed (one step). */
  const apply = async (scans: CarrierScan[], carrierEta: string | null | undefined, source: 'poll' | 'push' | 'admin'): Promise<void> => {
    const { fresh, entered } = absorbScans(state, scans);
    const slips: Slip[] = [];
    for (const scan of [...fresh].sort((a, b) => Date.parse(a.timestamp) - Date.parse(b.timestamp))) {
      if (scan.estimated_delivery) noteEta(scan.estimated_delivery, slips);
    }
    if (carrierEta) noteEta(carrierEta, slips);
    const now = carrierNow();
    if (state.status !== 'delivered' && !isTerminal(state.status) && state.estimatedDelivery && now > Date.parse(state.estimatedDelivery)) {
      slips.push({ previous: state.estimatedDelivery, next: null, reason: 'eta_passed' });
      state.estimatedDelivery = null;
    }
    if (!fresh.length && !entered.length && !slips.length) return;
    state.progressSeq += 1;
    await db.recordProgress({
      ...ref, shipmentId: input.shipmentId, scans: fresh, source, entered, status: state.status,
      estimatedDelivery: state.estimatedDelivery, slips, requestId: null, seq: state.progressSeq,
    });
    recordStatus(state.status);
    if (entered.includes('delivered')) await db.settleOrder({ ...ref, orderId: input.orderId });
  };

  /** A later ETA from the carrier is a slip; an earlier one (or one after the ETA passed) just replaces it. */
  const noteEta = (eta: string, slips: Slip[]): void => {
    const current = state.estimatedDelivery;
    if (current === eta || isTerminal(state.status)) return;
    if (current && Date.parse(eta) > Date.parse(current)) slips.push({ previous: current, next: eta, reason: 'carrier_updated_eta' });
    state.estimatedDelivery = eta;
  };

  const poll = async (): Promise<void> => {
    if (!state.label || isTerminal(state.status)) return;
    const now = new Date(carrierNow()).toISOString();
    try {
      const result = await carrier.trackShipment({
        ...ref, carrier: input.carrier, trackingNumber: state.label.trackingNumber, carrierReference: state.label.carrierReference, at: now,
        journey: {
          labelAt: input.labelAt, estimatedDelivery: state.label.estimatedDelivery, scenario: input.scenario,
          originCity: input.origin.city, destinationCity: input.destination.city,
        },
      });
      await apply(result.scans, result.estimatedDelivery, 'poll');
    } catch (err) {
      // The carrier stayed down for the whole retry window: try again at the next tick.
      log.warn('tracking poll failed', { shipmentId: input.shipmentId, error: String(err) });
      await apply([], undefined, 'poll');
    }
  };

  /** Pushed scans first, then a poll when due. */
  const tick = async (pollNow: boolean): Promise<void> => {
    while (pushes.length) {
      const push = pushes.shift()!;
      await apply(push.scans, push.estimatedDelivery, 'push');
    }
    if (pollNow) await poll();
  };

  setHandler(cancelShipmentUpdate, ({ requestId }) => mutex.runExclusive(async () => {
    mustBeCancellable();
    await carrier.voidLabel({ ...ref, carrier: input.carrier, trackingNumber: state.label!.trackingNumber, carrierReference: state.label!.carrierReference });
    const view = await db.cancelShipment({ ...ref, requestId });
    state.status = 'cancelled';
    state.statusAt = new Date(carrierNow()).toISOString();
    cancelled = true;
    recordStatus('cancelled');
    return view;
  }), { validator: (_args) => mustBeCancellable() });

  function mustBeCancellable(): void {
    if (!state.label || state.status === 'pending') throw refuse(REFUSALS.invalidTransition, 'the shipment has no label yet', { current_state: state.status });
    if (state.status !== 'label_created') {
      throw refuse(REFUSALS.invalidTransition, `a shipment can be cancelled only before pickup; it is ${state.status}`, { current_state: state.status });
    }
  }

  setHandler(advanceShipmentClockUpdate, ({ now }) => mutex.runExclusive(async () => {
    if (Date.parse(now) > Date.parse(state.carrierNow)) state.carrierNow = now;
    if (state.label) await tick(true);
    clockMoved = true;
    return { caughtUpTo: state.carrierNow };
  }), {
    validator: ({ now }) => {
      if (input.clock.kind !== 'test_clock') throw refuse(REFUSALS.invalidTransition, 'the shipment is not on a test clock', { current_state: state.status });
      if (!Number.isFinite(Date.parse(now))) throw refuse(REFUSALS.validationFailed, 'now must be a timestamp', { path: 'frozen_time' });
    },
  });

  setHandler(steerShipmentUpdate, (steer) => mutex.runExclusive(async () => {
    await db.recordAdminAction({ ...ref, action: steer.action, operator: steer.operator, reason: steer.reason });
    state.adminActions += 1;
    if (steer.action === 'repoll') {
      await tick(true);
    } else {
      const status = steer.action === 'mark_delivered' ? 'delivered' : 'exception';
      const at = new Date(Math.max(carrierNow(), Date.parse(state.statusAt))).toISOString();
      await apply([{
        id: `admin-${workflowInfo().runId}-${state.adminActions}`, status, timestamp: at, location: 'set by operator',
        description: `Marked ${status} by ${steer.operator}: ${steer.reason}`,
      }], undefined, 'admin');
    }
    return { ...state, seen: [...state.seen] };
  }), {
    validator: (steer) => {
      if (isTerminal(state.status) || !state.label) throw refuse(REFUSALS.invalidTransition, `the shipment is ${state.status}`, { current_state: state.status });
      if (!steer.operator.trim() || !steer.reason.trim()) throw refuse(REFUSALS.validationFailed, 'operator and reason are required', { path: 'reason' });
    },
  });

  if (!state.label) {
    try {
      const bought = await label.buyLabel(input);
      created = await db.recordShipment({ input, label: bought });
      state.label = { trackingNumber: bought.trackingNumber, carrierReference: bought.carrierReference, labelUrl: bought.labelUrl, estimatedDelivery: bought.rate.estimated_delivery };
      state.status = 'label_created';
      state.rank = 1;
      state.estimatedDelivery = bought.rate.estimated_delivery;
      state.seen.push(`${bought.trackingNumber}-label`);
      state.journeyStartedAt = Date.now();
      state.factor = Math.max(1, (Date.parse(bought.rate.estimated_delivery) - Date.parse(input.labelAt)) / input.journeyMs);
      recordStatus('label_created');
    } catch (err) {
      const cause = err instanceof ActivityFailure ? err.cause : err;
      rejected = cause instanceof ApplicationFailure && cause.nonRetryable
        ? cause
        : refuse(REFUSALS.rejected, `The carrier ${input.carrier} could not be reached to buy the label; nothing was bought.`, {
          status: 503, code: 'carrier_unavailable', title: 'Service Unavailable',
          suggestion: 'Retry in a minute, or choose another carrier (compare them with POST /v3/shipping/rates/compare).',
        });
      await condition(allHandlersFinished);
      throw rejected;
    }
    await db.notifyOrder({ ...ref, orderId: input.orderId, trackingNumber: state.label.trackingNumber, carrier: input.carrier });
  }

  while (!isTerminal(state.status) && !cancelled) {
    if (state.status === 'exception' && carrierNow() - Date.parse(state.statusAt) > EXCEPTION_HORIZON_MS) break;
    let timedOut = false;
    const wake = () => pushes.length > 0 || repoll || clockMoved || cancelled || isTerminal(state.status);
    if (input.clock.kind === 'test_clock') {
      await condition(wake);
    } else {
      const pollMs = input.clock.pollMs;
      const factor = input.clock.kind === 'compressed' ? state.factor : 1;
      const untilEta = state.estimatedDelivery ? (Date.parse(state.estimatedDelivery) - carrierNow()) / factor + 1 : pollMs;
      const waitMs = Math.max(10, Math.min(pollMs, untilEta > 0 ? untilEta : pollMs));
      timedOut = !(await condition(wake, waitMs));
    }
    if (cancelled || isTerminal(state.status)) break;
    const pollNow = timedOut || repoll;
    repoll = false;
    clockMoved = false;
    await mutex.runExclusive(() => tick(pollNow));
    if (continueAsNewDue()) {
      await continueAsNewWhenSuggested<typeof shipmentWorkflow>({
        unfinishedHandlers: 'wait',
        stillWanted: () => !isTerminal(state.status) && !cancelled && pushes.length === 0,
        args: () => [{ ...input, resume: { ...state, seen: [...state.seen] } }],
      });
    }
  }
  await condition(allHandlersFinished);
}
