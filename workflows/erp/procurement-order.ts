import { ApplicationFailure, allHandlersFinished, condition, log, proxyActivities, setHandler } from '@temporalio/workflow';
import type { ErpActivities } from '../../activities/erp/index.ts';
import { Mutex, setExclusiveUpdateHandler } from '../kit/entity.ts';
import { REFUSALS, refuse } from '../kit/failures.ts';
import { recordStatus } from '../kit/search-attributes.ts';
import {
  APPROVER_PERMISSION, DB_STEPS, ORDER_TRANSITIONS, TERMINAL_STATUSES, VENDOR_STEPS,
  advanceOrderClockUpdate, approveOrderUpdate, awaitOrderRecordedUpdate, billOrderUpdate, cancelOrderUpdate, editItemsUpdate,
  escalateOrderUpdate, orderStateQuery, reassignApproverUpdate, receiveOrderUpdate, rejectOrderUpdate, submitOrderUpdate,
  type Actor, type ApprovalStep, type ApproverRole, type OrderEvent, type OrderItem, type OrderState, type ProcurementOrderInput,
  type ProcurementOrderView, type ProcurementStatus,
} from './shared.ts';

const db = proxyActivities<ErpActivities>(DB_STEPS);
const vendor = proxyActivities<ErpActivities>({ ...VENDOR_STEPS, retry: { ...VENDOR_STEPS.retry, nonRetryableErrorTypes: [REFUSALS.rejected] } });

/** True when the vendor refused the order (a non-retryable refusal), as opposed to never answering. */
function refusedByVendor(err: unknown): boolean {
  for (let e: unknown = err; e; e = (e as { cause?: unknown }).cause) {
    if (e instanceof ApplicationFailure && e.type === REFUSALS.rejected) return true;
  }
  return false;
}

function stepsFor(roles: ApproverRole[]): ApprovalStep[] {
  return roles.map((role, i) => ({
    level: i + 1, role, permission: APPROVER_PERMISSION[role], assignee: null, approved_by: null, approved_at: null, note: null,
  }));
}

/** True when a key holding `granted` has `required` (`<scope>:write`; `*` holds everything). */
function holds(granted: readonly string[], required: string): boolean {
  return granted.includes('*') || granted.includes(required);
}

function refusal(status: number, code: string, message: string, suggestion: string, extra: Record<string, unknown> = {}): ApplicationFailure {
  return refuse(REFUSALS.rejected, message, { status, code, title: status === 403 ? 'Forbidden' : status === 422 ? 'Unprocessable Content' : 'Conflict', suggestion, ...extra });
}

/**
 * One purchase order (`procurement-order-po_…`) from draft to closed: approvals by amount tier
 * (updates with validators: no self-approval, no second approval by the same key, the tier's
 * permission), an escalation timer that reminds the next approver and finally expires the order,
 * the order sent to the vendor (acknowledged, or refused), receipts into stock and the vendor bill's
 * three-way match. The row is a read model only this workflow writes. Time is the order's test
 * clock when it has one (moved by `advanceOrderClock`), else workflow time.
 */
export class PurchaseOrder {
  readonly state: OrderState;
  readonly #input: ProcurementOrderInput;
  readonly #useClock: boolean;
  #view: ProcurementOrderView | undefined;
  #rejected: ApplicationFailure | undefined;
  #dirty = false;
  #caughtUpTo = 0;
  #escalateNow = false;
  #opened = false;
  #savedVersion = 0;

  constructor(input: ProcurementOrderInput) {
    this.#input = input;
    this.#useClock = input.testClockStart !== null;
    this.state = {
      status: 'draft', items: input.items, total: input.total, baseTotal: input.baseTotal,
      approval: { steps: stepsFor(input.roles), rejection: null, reminders: [] }, escalationCount: 0, nextEscalationAt: null,
      vendorReference: null, cancellationReason: null, receipts: [], bill: null, clockNow: input.testClockStart ?? 0, version: 0,
    };
  }

  now(): number {
    return this.#useClock ? this.state.clockNow : Date.now();
  }

  get done(): boolean {
    return TERMINAL_STATUSES.includes(this.state.status);
  }

  view(): ProcurementOrderView {
    return this.#view!;
  }

  async recorded(): Promise<ProcurementOrderView> {
    await condition(() => this.#opened || this.#rejected !== undefined);
    if (this.#rejected) throw this.#rejected;
    return this.#view!;
  }

  progress() {
    const waitingFor = this.state.status === 'pending_approval'
      ? `approval level ${this.#pendingStep()?.level ?? '?'} (${this.#pendingStep()?.role ?? '?'})`
      : this.state.status === 'ordered' || this.state.status === 'partially_received' ? 'goods receipt'
        : this.state.status === 'received' ? 'vendor bill' : this.state.status;
    return { state: this.state, caughtUpTo: this.#caughtUpTo, waitingFor };
  }

  async #save(event: OrderEvent, requestId: string | null = this.#input.requestId): Promise<ProcurementOrderView> {
    this.state.version += 1;
    this.#view = await db.saveProcurementOrder({ input: this.#input, state: this.state, event, requestId });
    this.#savedVersion = this.state.version;
    recordStatus(this.state.status);
    return this.#view;
  }

  #at(ms: number): string {
    return new Date(ms).toISOString();
  }

  /** True when the request with this Idempotency-Key was applied already (a retry after a lost answer). */
  #replay(key: string | null | undefined): boolean {
    return !!key && (this.state.appliedKeys ?? []).includes(key);
  }

  #applied(key: string | null | undefined): void {
    if (key) this.state.appliedKeys = [...(this.state.appliedKeys ?? []), key].slice(-50);
  }

  #pendingStep(): ApprovalStep | undefined {
    return this.state.approval.steps.find((s) => !s.approved_by);
  }

  #require(action: keyof typeof ORDER_TRANSITIONS): void {
    const allowed = ORDER_TRANSITIONS[action] as readonly ProcurementStatus[];
    if (!allowed.includes(this.state.status)) {
      throw refuse(REFUSALS.invalidTransition, `a ${this.state.status} purchase order cannot ${action === 'editItems' ? 'have its items edited' : `be handled by ${action}`}`, {
        current_state: this.state.status, action,
      });
    }
  }

  // ---- Lifecycle ----------------------------------------------------------------------------------

  /** Records the draft, then submits it: to approval, or straight to approved when no tier applies. */
  async open(): Promise<void> {
    try {
      await this.#save('procurement.order.created');
    } catch (err) {
      this.#rejected = refuse(REFUSALS.rejected, 'The purchase order could not be recorded.', { cause: String(err) });
      throw this.#rejected;
    }
    if (this.#input.submit !== false) await this.#submit(null);
    this.#opened = true;
  }

  validateSubmit(): void {
    this.#require('submit');
  }

  /** A draft goes to approval (or straight to approved when no tier applies). */
  async submit(req: { requestId: string | null }): Promise<ProcurementOrderView> {
    this.#dirty = true;
    await this.#submit(req.requestId);
    return this.#view!;
  }

  async #submit(requestId: string | null): Promise<void> {
    if (this.state.approval.steps.length) {
      this.state.status = 'pending_approval';
      this.state.nextEscalationAt = this.now() + this.#input.escalationMs;
      await this.#save(null, requestId);
    } else {
      this.state.status = 'approved';
      await this.#save('procurement.order.approved', requestId);
    }
  }

  /** Waits for whatever comes next: an update, the escalation timer, or a clock advance. */
  async waitForChange(): Promise<void> {
    this.#caughtUpTo = this.state.clockNow;
    const due = this.state.status === 'pending_approval' ? this.state.nextEscalationAt : null;
    this.#dirty = false;
    if (due === null) {
      await condition(() => this.#dirty);
    } else if (this.#useClock) {
      await condition(() => this.#dirty || this.state.clockNow >= due);
    } else {
      const wait = due - Date.now();
      if (wait > 0) await condition(() => this.#dirty, wait);
    }
  }

  /** Runs what is due: an escalation (or expiry), or sending an approved order to the vendor. */
  async runDue(): Promise<void> {
    const s = this.state;
    if (s.status === 'pending_approval' && (this.#escalateNow || (s.nextEscalationAt !== null && this.now() >= s.nextEscalationAt))) {
      await this.#escalate();
      return;
    }
    if (s.status === 'approved') await this.#sendToVendor();
  }

  get hasDueWork(): boolean {
    const s = this.state;
    return (s.status === 'pending_approval' && (this.#escalateNow || (s.nextEscalationAt !== null && this.now() >= s.nextEscalationAt)))
      || s.status === 'approved';
  }

  async #escalate(): Promise<void> {
    const s = this.state;
    // When it was due (an operator's escalation: now), so a clock that jumped shows each period's time.
    const at = this.#escalateNow || s.nextEscalationAt === null ? this.now() : Math.min(s.nextEscalationAt, this.now());
    this.#escalateNow = false;
    s.escalationCount += 1;
    if (s.escalationCount > this.#input.escalationLimit) {
      s.status = 'cancelled';
      s.cancellationReason = 'approval_expired';
      s.nextEscalationAt = null;
      await this.#save('procurement.order.cancelled');
      return;
    }
    const step = this.#pendingStep()!;
    s.approval.reminders.push({ level: step.level, role: step.role, assignee: step.assignee, at: this.#at(at), escalation: s.escalationCount });
    // Periods count from submission (or the last approval): a clock that jumps several periods
    // (or a worker that was down) runs each escalation in turn, and the last may expire the order.
    s.nextEscalationAt = (s.nextEscalationAt !== null && s.nextEscalationAt <= this.now() ? s.nextEscalationAt : this.now()) + this.#input.escalationMs;
    await this.#save('procurement.approval.escalated');
  }

  async #sendToVendor(): Promise<void> {
    const s = this.state;
    try {
      const ack = await vendor.sendPurchaseOrderToVendor({
        orderId: this.#input.orderId, accountId: this.#input.accountId, livemode: this.#input.livemode, vendorId: this.#input.vendorId,
        currency: this.#input.currency, total: s.total, items: s.items,
      });
      if (s.status !== 'approved') return; // cancelled while the vendor call ran: the vendor's copy is a dead letter
      s.status = 'ordered';
      s.vendorReference = ack.reference;
      await this.#save(null);
    } catch (err) {
      log.warn('the vendor did not take the purchase order', { orderId: this.#input.orderId, error: String(err) });
      if (s.status !== 'approved') return;
      s.status = 'cancelled';
      s.cancellationReason = refusedByVendor(err) ? 'vendor_rejected' : 'vendor_unreachable';
      await this.#save('procurement.order.cancelled');
    }
  }

  // ---- Updates --------------------------------------------------------------------------------------

  validateApprove(actor: Actor & { idempotencyKey?: string | null }): void {
    if (this.#replay(actor.idempotencyKey)) return;
    this.#require('approve');
    const step = this.#pendingStep()!;
    if (actor.keyId === this.#input.createdBy) {
      throw refusal(403, 'self_approval_forbidden', 'The key that created a purchase order cannot approve it.', 'Ask another approver (a different API key) to approve the order.');
    }
    if (this.state.approval.steps.some((st) => st.approved_by === actor.keyId)) {
      throw refusal(409, 'already_approved', `This key already approved the order (level ${this.state.approval.steps.find((st) => st.approved_by === actor.keyId)!.level}); the next level needs a different approver.`,
        'Ask a different approver to approve the next level.', { current_state: this.state.status });
    }
    if (step.assignee && step.assignee !== actor.keyId) {
      throw refusal(403, 'approver_not_assigned', `Approval level ${step.level} is assigned to another approver.`, 'Ask the assigned approver, or have an operator reassign the step.');
    }
    if (!holds(actor.permissions, step.permission)) {
      throw refusal(403, 'permission_denied', `Approval level ${step.level} (${step.role}) needs the permission ${step.permission}.`,
        `Approve with a key that holds ${step.permission}.`, { required_permission: step.permission });
    }
  }

  async approve(actor: Actor & { note: string | null; requestId: string | null; idempotencyKey?: string | null }): Promise<ProcurementOrderView> {
    if (this.#replay(actor.idempotencyKey)) return this.#view!;
    this.#applied(actor.idempotencyKey);
    const step = this.#pendingStep()!;
    step.approved_by = actor.keyId;
    step.approved_at = this.#at(this.now());
    step.note = actor.note;
    this.#dirty = true;
    if (this.#pendingStep()) {
      // The next level's timer starts now.
      this.state.nextEscalationAt = this.now() + this.#input.escalationMs;
      return this.#save(null, actor.requestId);
    }
    this.state.status = 'approved';
    this.state.nextEscalationAt = null;
    return this.#save('procurement.order.approved', actor.requestId);
  }

  validateReject(actor: Actor & { idempotencyKey?: string | null }): void {
    if (this.#replay(actor.idempotencyKey)) return;
    this.#require('reject');
    const step = this.#pendingStep()!;
    if (actor.keyId === this.#input.createdBy) {
      throw refusal(403, 'self_approval_forbidden', 'The key that created a purchase order cannot decide on it.', 'Ask another approver to reject it, or cancel the order.');
    }
    if (!holds(actor.permissions, step.permission)) {
      throw refusal(403, 'permission_denied', `Deciding approval level ${step.level} (${step.role}) needs the permission ${step.permission}.`,
        `Use a key that holds ${step.permission}.`, { required_permission: step.permission });
    }
  }

  async reject(actor: Actor & { reason: string | null; requestId: string | null; idempotencyKey?: string | null }): Promise<ProcurementOrderView> {
    if (this.#replay(actor.idempotencyKey)) return this.#view!;
    this.#applied(actor.idempotencyKey);
    this.state.approval.rejection = { by: actor.keyId, at: this.#at(this.now()), reason: actor.reason };
    this.state.status = 'rejected';
    this.state.nextEscalationAt = null;
    this.#dirty = true;
    return this.#save('procurement.order.rejected', actor.requestId);
  }

  validateEditItems(): void {
    this.#require('editItems');
  }

  /** New items reset every approval: the tiers are recomputed and the approvers start again. */
  async editItems(req: { items: OrderItem[]; total: number; baseTotal: number; roles: ApproverRole[]; requestId: string | null }): Promise<ProcurementOrderView> {
    const s = this.state;
    s.items = req.items;
    s.total = req.total;
    s.baseTotal = req.baseTotal;
    s.approval = { steps: stepsFor(req.roles), rejection: null, reminders: s.approval.reminders };
    s.escalationCount = 0;
    this.#dirty = true;
    if (s.status === 'draft') return this.#save(null, req.requestId);
    await this.#submit(req.requestId);
    return this.#view!;
  }

  validateReceive(req: { receiptId: string; lines: { line: number; quantity: number }[] }): void {
    if (this.state.receipts.some((r) => r.id === req.receiptId)) return; // a retry: answered below
    this.#require('receive');
    const errors: { path: string; message: string }[] = [];
    req.lines.forEach((l, i) => {
      const item = this.state.items.find((it) => it.line === l.line);
      if (!item) errors.push({ path: `lines.${i}.line`, message: `the order has no line ${l.line} (lines 1–${this.state.items.length})` });
      else if (l.quantity > item.quantity - item.received) {
        errors.push({ path: `lines.${i}.quantity`, message: `line ${l.line} has ${item.quantity - item.received} of ${item.quantity} still to receive; ${l.quantity} is more` });
      }
    });
    if (errors.length) throw refuse(REFUSALS.validationFailed, 'Some receipt lines are invalid.', { errors });
  }

  async receive(req: { receiptId: string; lines: { line: number; quantity: number }[]; requestId: string | null }): Promise<ProcurementOrderView> {
    const s = this.state;
    if (s.receipts.some((r) => r.id === req.receiptId)) return this.#view!;
    const lines = req.lines.filter((l) => l.quantity > 0);
    const value = lines.reduce((sum, l) => sum + l.quantity * s.items.find((i) => i.line === l.line)!.unit_price, 0);
    const previous = { items: s.items, receipts: s.receipts, status: s.status, version: s.version };
    s.items = s.items.map((i) => ({ ...i, received: i.received + (lines.find((l) => l.line === i.line)?.quantity ?? 0) }));
    s.receipts = [...s.receipts, { id: req.receiptId, received_at: this.#at(this.now()), lines, value, transaction_id: null }];
    s.status = s.items.every((i) => i.received >= i.quantity) ? 'received' : 'partially_received';
    s.version += 1;
    try {
      const transactionId = await db.recordProcurementReceipt({
        input: this.#input, state: s, event: 'procurement.order.received', requestId: req.requestId, receipt: s.receipts.at(-1)!,
      });
      s.receipts = s.receipts.map((r) => (r.id === req.receiptId ? { ...r, transaction_id: transactionId } : r));
      this.#savedVersion = s.version;
    } catch (err) {
      // Refused (an unknown SKU or warehouse for the stock): nothing was written; the state goes back.
      Object.assign(s, previous);
      throw err;
    }
    this.#dirty = true;
    recordStatus(s.status);
    this.#view = await db.getProcurementOrderView({ accountId: this.#input.accountId, livemode: this.#input.livemode, orderId: this.#input.orderId });
    return this.#view;
  }

  validateBill(req: { billId: string; amount: number }): void {
    if (this.state.bill?.id === req.billId) return; // a retry: answered below
    this.#require('bill');
    const received = this.#receivedValue();
    const allowed = this.#tolerance(received);
    if (Math.abs(req.amount - received) > allowed) {
      throw refusal(422, 'three_way_match_failed',
        `The bill (${req.amount}) does not match the order and its receipts: received value ${received}, tolerance ±${allowed} (${this.#input.tolerancePercent} %).`,
        'Check the bill against the receipts; ask the vendor for a corrected bill, or record the missing receipt first.',
        { received_value: received, billed: req.amount, tolerance: allowed, errors: [{ path: 'amount', message: `must be within ${allowed} of the received value ${received} (minor units)` }] });
    }
  }

  #receivedValue(): number {
    return this.state.items.reduce((sum, i) => sum + i.received * i.unit_price, 0);
  }

  /** `received × tolerance %`, half-even on hundredths of a percent (the same rule as accounting.ts). */
  #tolerance(received: number): number {
    const [whole, frac = ''] = this.#input.tolerancePercent.split('.');
    const hundredths = Number(whole) * 100 + Number((frac + '00').slice(0, 2));
    const exact = (received * hundredths) / 10_000;
    const floor = Math.floor(exact);
    const diff = exact - floor;
    return diff > 0.5 || (diff === 0.5 && floor % 2 === 1) ? floor + 1 : floor;
  }

  async bill(req: { billId: string; invoiceNumber: string; amount: number; requestId: string | null }): Promise<ProcurementOrderView> {
    const s = this.state;
    if (s.bill?.id === req.billId) return this.#view!;
    const received = this.#receivedValue();
    const bill = { id: req.billId, invoice_number: req.invoiceNumber, amount: req.amount, received_value: received, variance: req.amount - received, recorded_at: this.#at(this.now()) };
    s.status = 'closed';
    s.version += 1;
    const transactionId = await db.recordProcurementBill({ input: this.#input, state: s, event: null, requestId: req.requestId, bill });
    s.bill = { ...bill, transaction_id: transactionId };
    this.#savedVersion = s.version;
    this.#dirty = true;
    recordStatus(s.status);
    this.#view = await db.getProcurementOrderView({ accountId: this.#input.accountId, livemode: this.#input.livemode, orderId: this.#input.orderId });
    return this.#view;
  }

  validateCancel(req: { idempotencyKey?: string | null }): void {
    if (this.#replay(req.idempotencyKey)) return;
    this.#require('cancel');
  }

  async cancel(req: { reason: string; requestId: string | null; idempotencyKey?: string | null }): Promise<ProcurementOrderView> {
    if (this.#replay(req.idempotencyKey)) return this.#view!;
    this.#applied(req.idempotencyKey);
    this.state.status = 'cancelled';
    this.state.cancellationReason = req.reason;
    this.state.nextEscalationAt = null;
    this.#dirty = true;
    return this.#save('procurement.order.cancelled', req.requestId);
  }

  validateAdvance(req: { to: number }): void {
    if (!this.#useClock) {
      throw refusal(409, 'no_test_clock', 'This purchase order runs on real time; only an order created with test_clock_time has a clock to advance.',
        'Create the order in test mode with test_clock_time to drive its timers.', { current_state: this.state.status });
    }
    if (req.to < this.state.clockNow) {
      throw refuse(REFUSALS.validationFailed, 'The clock cannot go back.', { path: 'to', errors: [{ path: 'to', message: `must not be before the order's clock time ${this.#at(this.state.clockNow)}` }] });
    }
  }

  /** Moves the test clock; answers once the main loop has run everything due by then. */
  async advance(req: { to: number }): Promise<ProcurementOrderView> {
    this.state.clockNow = req.to;
    this.#dirty = true;
    // Caught up (or finished), with every change written: the answer is the order as stored.
    await condition(() => (this.#caughtUpTo >= req.to || this.done) && this.#savedVersion === this.state.version);
    return this.#view!;
  }

  validateEscalate(): void {
    this.#require('escalate');
  }

  async escalateNow(): Promise<ProcurementOrderView> {
    const version = this.state.version;
    this.#escalateNow = true;
    this.#dirty = true;
    await condition(() => this.#savedVersion > version);
    return this.#view!;
  }

  validateReassign(req: { level: number }): void {
    this.#require('reassign');
    const step = this.#pendingStep()!;
    if (req.level !== step.level) {
      throw refuse(REFUSALS.validationFailed, `level ${req.level} is not the pending approval level (${step.level})`, { path: 'level' });
    }
  }

  async reassign(req: { level: number; assignee: string }): Promise<ProcurementOrderView> {
    this.#pendingStep()!.assignee = req.assignee;
    return this.#save(null);
  }
}

export async function procurementOrderWorkflow(input: ProcurementOrderInput): Promise<ProcurementOrderView> {
  const order = new PurchaseOrder(input);
  const lock = new Mutex();
  setHandler(orderStateQuery, () => order.progress());
  setHandler(awaitOrderRecordedUpdate, () => order.recorded());
  setExclusiveUpdateHandler(lock, approveOrderUpdate, { validate: (a) => order.validateApprove(a), handle: (a) => order.approve(a) });
  setExclusiveUpdateHandler(lock, rejectOrderUpdate, { validate: (a) => order.validateReject(a), handle: (a) => order.reject(a) });
  setExclusiveUpdateHandler(lock, editItemsUpdate, { validate: () => order.validateEditItems(), handle: (r) => order.editItems(r) });
  setExclusiveUpdateHandler(lock, receiveOrderUpdate, { validate: (r) => order.validateReceive(r), handle: (r) => order.receive(r) });
  setExclusiveUpdateHandler(lock, billOrderUpdate, { validate: (r) => order.validateBill(r), handle: (r) => order.bill(r) });
  setExclusiveUpdateHandler(lock, submitOrderUpdate, { validate: () => order.validateSubmit(), handle: (r) => order.submit(r) });
  setExclusiveUpdateHandler(lock, cancelOrderUpdate, { validate: (r) => order.validateCancel(r), handle: (r) => order.cancel(r) });
  setExclusiveUpdateHandler(lock, reassignApproverUpdate, { validate: (r) => order.validateReassign(r), handle: (r) => order.reassign(r) });
  // These wait for the main loop, so they take no lock (the loop's steps take it).
  setHandler(advanceOrderClockUpdate, (r) => order.advance(r), { validator: (r) => order.validateAdvance(r) });
  setHandler(escalateOrderUpdate, () => order.escalateNow(), { validator: () => order.validateEscalate() });

  try {
    await order.open();
  } catch {
    await condition(allHandlersFinished);
    return order.recorded();
  }
  while (!order.done) {
    if (order.hasDueWork) {
      await lock.runExclusive(() => order.runDue());
      continue;
    }
    await order.waitForChange();
  }
  await condition(allHandlersFinished);
  return order.view();
}
