import { ActivityFailure, ApplicationFailure, allHandlersFinished, condition, proxyActivities, setHandler } from '@temporalio/workflow';
import type { WarehouseActivities } from '../../activities/warehouses/index.ts';
import { Mutex, setExclusiveUpdateHandler } from '../kit/entity.ts';
import { Deadline } from './deadline.ts';
import { REFUSALS, refuse } from '../kit/failures.ts';
import { recordStatus } from '../kit/search-attributes.ts';
import {
  DB_STEPS, advanceTransferClockUpdate, cancelTransferUpdate, dispatchTransferUpdate, receiveTransferUpdate, transferCreatedUpdate, transferStateQuery,
  type TransferDraft, type TransferState, type TransferView,
} from './shared.ts';

const acts = proxyActivities<WarehouseActivities>(DB_STEPS);

const TERMINAL = new Set<TransferState['status']>(['received', 'cancelled']);

/**
 * One stock transfer (`transfer-wtr_…`). The API starts it with the `transferCreated` update; its
 * first activity writes the row and reserves the units at the source in one transaction (a shortfall
 * refuses the transfer with the short SKUs, nothing written). Then `reserved` until dispatched (the
 * units leave the source and show as in transit at the destination) or cancelled (the reservation is
 * released); receipts move units from in transit to on hand, partially or fully, never more than
 * outstanding. Each step is an update with a validator and one activity that changes the row and the
 * stock in one transaction under the row's lock, idempotent under retry (a receipt by its id), so a
 * worker killed mid-step never counts stock twice. When `expected_arrival` ends before the last
 * receipt, `warehouse.transfer.delayed` is recorded once (on the transfer's test clock in the
 * sandbox when it was created with one: see Deadline).
 */
export async function transferWorkflow(draft: TransferDraft): Promise<TransferState> {
  const ref = { transferId: draft.transferId, accountId: draft.accountId, livemode: draft.livemode };
  const state: TransferState = { status: 'creating', items: draft.items.map((i) => ({ ...i, received: 0 })), delayed: false };
  const mutex = new Mutex();
  let created: TransferView | undefined;
  let rejected: ApplicationFailure | undefined;

  const apply = (view: TransferView): TransferView => {
    state.status = view.status;
    state.delayed = view.delayed;
    state.items = view.items.map((i) => ({ sku: i.sku, quantity: i.quantity, received: i.received }));
    recordStatus(view.status);
    return view;
  };
  const mustBe = (allowed: TransferState['status'][], action: string) => {
    if (!allowed.includes(state.status)) {
      throw refuse(REFUSALS.invalidTransition, `a ${state.status} transfer cannot be ${action}`, { current_state: state.status });
    }
  };

  const deadline = new Deadline(draft.testClockStart);
  const done = () => TERMINAL.has(state.status);
  setHandler(advanceTransferClockUpdate, (req) => deadline.advance(req.to, done), {
    validator: (req) => deadline.validateAdvance(req.to, state.status, created !== undefined),
  });
  setHandler(transferStateQuery, () => ({ ...state, items: state.items.map((i) => ({ ...i })) }));
  setHandler(transferCreatedUpdate, async () => {
    await condition(() => created !== undefined || rejected !== undefined);
    if (rejected) throw rejected;
    return created!;
  });
  setExclusiveUpdateHandler(mutex, dispatchTransferUpdate, {
    validate: () => mustBe(['reserved'], 'dispatched'),
    handle: async (actor) => apply(await acts.dispatchTransfer({ ...ref, ...actor })),
  });
  setExclusiveUpdateHandler(mutex, cancelTransferUpdate, {
    validate: () => mustBe(['reserved'], 'cancelled (only a transfer not yet dispatched can be)'),
    handle: async (input) => apply(await acts.cancelTransfer({ ...ref, ...input })),
  });
  setExclusiveUpdateHandler(mutex, receiveTransferUpdate, {
    validate: (input) => {
      mustBe(['in_transit', 'partially_received'], 'received');
      const errors: { path: string; message: string }[] = [];
      const seen = new Set<string>();
      input.items.forEach((item, i) => {
        const line = state.items.find((l) => l.sku === item.sku);
        if (!line) errors.push({ path: `items.${i}.sku`, message: `'${item.sku}' is not on this transfer` });
        else if (seen.has(item.sku)) errors.push({ path: `items.${i}.sku`, message: `'${item.sku}' is listed twice; send one line per SKU` });
        else if (item.quantity > line.quantity - line.received) {
          errors.push({ path: `items.${i}.quantity`, message: `over-receipt: ${line.quantity - line.received} of ${line.quantity} units of '${item.sku}' are outstanding` });
        }
        seen.add(item.sku);
      });
      if (errors.length) throw refuse(REFUSALS.validationFailed, errors.map((e) => e.message).join('; '), { errors });
    },
    handle: async (input) => apply(await acts.receiveTransfer({ ...ref, ...input })),
  });

  try {
    created = apply(await acts.createTransfer(draft));
  } catch (err) {
    const cause = err instanceof ActivityFailure ? err.cause : err;
    rejected = cause instanceof ApplicationFailure ? cause : refuse(REFUSALS.rejected, 'The transfer could not be created.');
    await condition(allHandlersFinished);
    throw rejected;
  }

  if (draft.expectedArrival && !created.delayed) {
    // The end of the expected day (UTC): a transfer not fully received by then is late.
    if (await deadline.passed(Date.parse(`${draft.expectedArrival}T23:59:59.999Z`), done)) {
      await mutex.runExclusive(async () => {
        if (!done()) apply(await acts.markTransferDelayed(ref));
      });
    }
  }
  deadline.settle();
  await condition(done);
  await condition(allHandlersFinished);
  return state;
}
