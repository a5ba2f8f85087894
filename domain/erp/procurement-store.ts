import type { EntityManager } from '@mikro-orm/postgresql';
import { newId } from '../../platform/ids.ts';
import { applyStockChanges } from '../commerce/public.ts';
import { recordEvent } from '../events/outbox.ts';
import { convertMinorUnits, toMajorNumber } from '../money.ts';
import { scopeColumns, type Scope } from '../scope.ts';
import {
  procurementOrderWorkflowId, type OrderBill, type OrderEvent, type OrderReceipt, type OrderState, type ProcurementOrderInput,
  type ProcurementOrderView,
} from '../../workflows/erp/shared.ts';
import { ProcurementOrder } from './entities.ts';
import { CHART, ensureLedger, writeEntry, type EntryHeader } from './ledger.ts';

/**
 * The purchase order's read model, written only by its workflow's activities: each save carries the
 * workflow's state and its version; a save whose version the row already has is a retry and changes
 * nothing (its event was recorded with the first). Receipts and the vendor bill write their stock
 * and ledger entries in the same transaction as the order row.
 */

export function orderView(o: ProcurementOrder): ProcurementOrderView {
  return {
    id: o.id, object: 'procurement_order', livemode: o.livemode, vendor_id: o.vendorId, status: o.status, currency: o.currency,
    total: toMajorNumber(o.total, o.currency), total_minor: o.total, base_total_minor: o.baseTotal,
    items: o.items.map((i) => ({
      line: i.line, sku: i.sku, description: i.description, quantity: i.quantity, unit_price: toMajorNumber(i.unit_price, o.currency),
      unit_price_minor: i.unit_price, amount_minor: i.amount, received: i.received,
    })),
    approval_required: o.approvalRequired, approval: o.approval, escalation_count: o.escalationCount,
    next_escalation_at: o.nextEscalationAt?.toISOString() ?? null, warehouse_id: o.warehouseId ?? null, project_id: o.projectId ?? null,
    created_by: o.createdBy, vendor_reference: o.vendorReference ?? null, cancellation_reason: o.cancellationReason ?? null,
    receipts: o.receipts, bill: o.bill ?? null, workflow_id: o.workflowId, test_clock_time: o.testClockTime?.toISOString() ?? null,
    metadata: o.metadata, created_at: o.createdAt.toISOString(), updated_at: o.updatedAt.toISOString(),
  };
}

export interface SaveOrder {
  input: ProcurementOrderInput;
  state: OrderState;
  event: OrderEvent;
  requestId: string | null;
}

function applyState(o: ProcurementOrder, s: OrderState, input: ProcurementOrderInput): void {
  o.status = s.status;
  o.items = s.items;
  o.total = s.total;
  o.baseTotal = s.baseTotal;
  o.approval = s.approval;
  o.escalationCount = s.escalationCount;
  o.nextEscalationAt = s.nextEscalationAt === null ? null : new Date(s.nextEscalationAt);
  o.vendorReference = s.vendorReference;
  o.cancellationReason = s.cancellationReason;
  o.receipts = s.receipts;
  o.bill = s.bill;
  o.testClockTime = input.testClockStart === null ? null : new Date(s.clockNow);
  o.version = s.version;
  o.updatedAt = new Date();
}

/** Writes the order at the state's version (and its event), in `tx`. Returns false when the row already has that version. */
async function writeOrder(tx: EntityManager, save: SaveOrder): Promise<boolean> {
  const { input, state } = save;
  const scope = { accountId: input.accountId, livemode: input.livemode };
  let order = await tx.findOne(ProcurementOrder, { id: input.orderId }, { lockMode: 4 });
  if (order && order.version >= state.version) return false;
  if (!order) {
    const now = new Date();
    order = tx.create(ProcurementOrder, {
      id: input.orderId, ...scopeColumns(scope), vendorId: input.vendorId, status: state.status, currency: input.currency, total: state.total,
      baseTotal: state.baseTotal, items: state.items, approvalRequired: input.approvalRequired, warehouseId: input.warehouseId,
      projectId: input.projectId, createdBy: input.createdBy, approval: state.approval, escalationCount: 0, nextEscalationAt: null,
      vendorReference: null, cancellationReason: null, receipts: [], bill: null, workflowId: procurementOrderWorkflowId(input.orderId),
      testClockTime: null, version: 0, metadata: input.metadata, createdAt: now, updatedAt: now,
    });
  }
  applyState(order, state, input);
  if (save.event) recordEvent(tx, scope, { type: save.event, object: orderView(order), requestId: save.requestId });
  await tx.flush();
  return true;
}

export async function saveOrder(em: EntityManager, save: SaveOrder): Promise<ProcurementOrderView> {
  await em.transactional((tx) => writeOrder(tx, save));
  return orderView(await em.findOneOrFail(ProcurementOrder, { id: save.input.orderId }, { refresh: true }));
}

/** The part of a receipt the workflow decided: which lines, how many; the value is computed here. */
export interface ReceiptWrite extends SaveOrder {
  receipt: OrderReceipt;
}

/**
 * A goods receipt: the stock arrives in the order's warehouse (SKU lines), the ledger gets
 * Dr Inventory / Cr Goods received not invoiced at the order's price, and the order row moves on,
 * all in one transaction. Repeated (a retried activity), it finds the receipt recorded and does
 * nothing. Returns the receipt's ledger transaction id.
 */
export async function recordReceipt(em: EntityManager, write: ReceiptWrite): Promise<string | null> {
  const { input, receipt } = write;
  const scope = { accountId: input.accountId, livemode: input.livemode };
  const ledger = await ensureLedger(em, scope);
  return em.transactional(async (tx) => {
    const order = await tx.findOne(ProcurementOrder, { id: input.orderId }, { lockMode: 4 });
    const done = order?.receipts.find((r) => r.id === receipt.id);
    if (done) return done.transaction_id;
    const stockLines = receipt.lines
      .map((l) => ({ item: write.state.items.find((i) => i.line === l.line)!, quantity: l.quantity }))
      .filter((l) => l.item.sku !== null && l.quantity > 0);
    if (stockLines.length && input.warehouseId) {
      await addReceivedStock(tx, scope, input.warehouseId, stockLines.map((l) => ({ sku: l.item.sku!, quantity: l.quantity })), write.requestId);
    }
    const baseValue = convertMinorUnits(receipt.value, input.currency, ledger.baseCurrency, input.exchangeRate);
    const txnId = newId('financialTransaction');
    if (baseValue > 0) {
      await writeEntry(tx, scope, procurementHeader(input, ledger.baseCurrency, {
        id: txnId, type: 'expense', amount: receipt.value, baseAmount: baseValue, accountCode: CHART.inventory, counterAccountCode: CHART.grni,
        description: `Goods received on ${input.orderId} (${receipt.id})`, sourceId: receipt.id,
      }), [
        { code: CHART.inventory, debit: baseValue, credit: 0, description: `Receipt ${receipt.id}` },
        { code: CHART.grni, debit: 0, credit: baseValue, description: `Receipt ${receipt.id}` },
      ], write.requestId);
    }
    const transactionId = baseValue > 0 ? txnId : null;
    const state: OrderState = {
      ...write.state,
      receipts: write.state.receipts.map((r) => (r.id === receipt.id ? { ...r, transaction_id: transactionId } : r)),
    };
    await writeOrder(tx, { ...write, state });
    return transactionId;
  });
}

/**
 * The one call into stock: receipts add units through the commerce area's stock operations. Kept
 * in one small function so it can move to the warehouses' movements ledger when that lands.
 */
export async function addReceivedStock(
  tx: EntityManager, scope: Scope, warehouseId: string, lines: { sku: string; quantity: number }[], requestId: string | null,
): Promise<void> {
  await applyStockChanges(tx, scope, lines.map((l) => ({ sku: l.sku, warehouse_id: warehouseId, quantity: l.quantity, operation: 'add' as const })),
    requestId, (i, field) => `lines.${i}.${field}`);
}

export interface BillWrite extends SaveOrder {
  bill: Omit<OrderBill, 'transaction_id'>;
}

/**
 * The vendor bill, matched to the order and its receipts: Dr Goods received not invoiced (the
 * received value), Cr Accounts payable (the billed amount), and the difference (within the
 * tolerance the workflow checked) to Purchase price variance; the order closes. Once only.
 */
export async function recordBill(em: EntityManager, write: BillWrite): Promise<string> {
  const { input, bill } = write;
  const scope = { accountId: input.accountId, livemode: input.livemode };
  const ledger = await ensureLedger(em, scope);
  return em.transactional(async (tx) => {
    const order = await tx.findOne(ProcurementOrder, { id: input.orderId }, { lockMode: 4 });
    if (order?.bill) return order.bill.transaction_id;
    const toBase = (minor: number) => convertMinorUnits(minor, input.currency, ledger.baseCurrency, input.exchangeRate);
    const received = toBase(bill.received_value);
    const billed = toBase(bill.amount);
    const variance = billed - received;
    const txnId = newId('financialTransaction');
    await writeEntry(tx, scope, procurementHeader(input, ledger.baseCurrency, {
      id: txnId, type: 'expense', amount: bill.amount, baseAmount: billed, accountCode: CHART.grni, counterAccountCode: CHART.payable,
      description: `Vendor bill ${bill.invoice_number} for ${input.orderId}`, sourceId: bill.id,
    }), [
      { code: CHART.grni, debit: received, credit: 0, description: 'Received value' },
      { code: CHART.priceVariance, debit: Math.max(variance, 0), credit: Math.max(-variance, 0), description: 'Purchase price variance' },
      { code: CHART.payable, debit: 0, credit: billed, description: `Bill ${bill.invoice_number}` },
    ], write.requestId);
    await writeOrder(tx, { ...write, state: { ...write.state, bill: { ...bill, transaction_id: txnId } } });
    return txnId;
  });
}

function procurementHeader(
  input: ProcurementOrderInput, baseCurrency: string,
  e: { id: string; type: 'expense'; amount: number; baseAmount: number; accountCode: string; counterAccountCode: string; description: string; sourceId: string },
): EntryHeader {
  const date = new Date().toISOString().slice(0, 10);
  return {
    id: e.id, type: e.type, amount: e.amount, currency: input.currency, baseCurrency, baseAmount: e.baseAmount, exchangeRate: input.exchangeRate,
    accountCode: e.accountCode, counterAccountCode: e.counterAccountCode, description: e.description, customerId: null, projectId: input.projectId,
    taxInclusive: false, taxRate: '0', netAmount: e.amount, taxAmount: 0, paymentTerms: null, transactionDate: date, dueDate: null,
    discountDate: null, discountPercent: null, reversalOfId: null, sourceType: 'procurement', sourceId: e.sourceId, sourceEventId: null,
    metadata: { procurement_order: input.orderId },
  };
}

export async function findOrderRow(em: EntityManager, id: string): Promise<ProcurementOrder | null> {
  return em.findOne(ProcurementOrder, { id });
}
