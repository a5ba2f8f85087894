import type { EntityManager } from '@mikro-orm/postgresql';
import { newId } from '../../platform/ids.ts';
import { convertMinorUnits } from '../money.ts';
import { perPass, type EventConsumer } from '../events/consumers.ts';
import type { Scope } from '../scope.ts';
import { searchAttributes } from '../../platform/temporal-kit.ts';
import { ledgerPostingWorkflowId, type LedgerPostingInput } from '../../workflows/erp/shared.ts';
import { FinancialTransaction } from './entities.ts';
import { CHART, ensureLedger, ledgerRefusal, ledgerStarted, rateOn, writeEntry, type EntryHeader, type PostingLine } from './ledger.ts';
import { isUniqueViolation } from '../../db/errors.ts';

/**
 * Other areas' events, posted to the ledger (docs/erp.md, "Postings from other areas"):
 *
 * | event               | entry                                                                 |
 * |---------------------|-----------------------------------------------------------------------|
 * | `invoice.paid`      | Dr 1200 receivable (total) / Cr 4000 revenue (subtotal), Cr 2200 tax   |
 * | `payment.succeeded` | Dr 1010 gateway clearing / Cr 1200 receivable                         |
 * | `payment.refunded`  | Dr 4100 returns / Cr 1010 clearing, for the newly refunded part        |
 *
 * A subscription's paid invoice thus books the sale, and its payment clears the receivable; a
 * payment with no invoice leaves a credit on the receivable (a customer prepayment). Each event posts
 * once (unique per event in the database). Only ledgers that have started (first ERP use) receive
 * postings: events before that are not back-posted.
 */
export const POSTED_EVENTS = ['invoice.paid', 'payment.succeeded', 'payment.refunded'] as const;

export const ledgerPostingConsumer: EventConsumer = {
  name: 'erp-ledger-postings',
  async plan(event, em) {
    if (!(POSTED_EVENTS as readonly string[]).includes(event.type)) return [];
    if (!(await perPass(em, 'erp-ledger-postings:started', () => ledgerStarted(em, { accountId: event.accountId, livemode: event.livemode })))) return [];
    const object = (event.data.object ?? {}) as Record<string, unknown>;
    const input: LedgerPostingInput = { eventId: event.id, eventType: event.type, accountId: event.accountId, livemode: event.livemode, object };
    return [{
      workflowType: 'ledgerPostingWorkflow', workflowId: ledgerPostingWorkflowId(event.id), area: 'erp', args: [input],
      searchAttributes: searchAttributes({
        accountId: event.accountId, livemode: event.livemode, customerId: event.customerId, resourceId: typeof object.id === 'string' ? object.id : event.id,
      }),
    }];
  },
};

const num = (v: unknown): number => (typeof v === 'number' && Number.isSafeInteger(v) ? v : 0);
const str = (v: unknown): string | null => (typeof v === 'string' && v ? v : null);

/** Posts the event's entry; returns the transaction id (null: nothing to post). Idempotent per event. */
export async function postEventToLedger(em: EntityManager, input: LedgerPostingInput): Promise<string | null> {
  const scope: Scope = { accountId: input.accountId, livemode: input.livemode };
  const existing = await em.findOne(FinancialTransaction, { sourceEventId: input.eventId });
  if (existing) return existing.id;
  const ledger = await ensureLedger(em, scope);
  const o = input.object;
  const currency = (str(o.currency) ?? ledger.baseCurrency).toUpperCase();
  const date = new Date().toISOString().slice(0, 10);
  const rate = await rateOn(em, ledger.baseCurrency, currency, date);
  if (!rate) {
    throw ledgerRefusal(`No exchange rate from ${currency} to ${ledger.baseCurrency} on ${date}: event ${input.eventId} cannot be posted.`,
      'Add the rate with POST /v3/financial/exchange_rates; then restart the posting workflow (reset it in the Temporal UI).');
  }
  const toBase = (minor: number) => convertMinorUnits(minor, currency, ledger.baseCurrency, rate);
  const sourceId = str(o.id);
  const customerId = str(o.customer_id);
  const id = newId('financialTransaction');

  return em.transactional(async (tx) => {
    let type: EntryHeader['type'];
    let amount: number;
    let lines: PostingLine[];
    let accountCode: string;
    let counterCode: string;
    let taxAmount = 0;
    if (input.eventType === 'invoice.paid') {
      amount = num(o.amount);
      taxAmount = num(o.tax);
      const gross = toBase(amount);
      const tax = toBase(taxAmount);
      type = 'revenue';
      accountCode = CHART.revenue;
      counterCode = CHART.receivable;
      lines = [
        { code: CHART.receivable, debit: gross, credit: 0, description: `Invoice ${sourceId}` },
        { code: CHART.revenue, debit: 0, credit: gross - tax },
        { code: CHART.taxPayable, debit: 0, credit: tax, description: 'Tax' },
      ];
    } else if (input.eventType === 'payment.succeeded') {
      amount = num(o.amount);
      const gross = toBase(amount);
      type = 'transfer';
      accountCode = CHART.clearing;
      counterCode = CHART.receivable;
      lines = [
        { code: CHART.clearing, debit: gross, credit: 0, description: `Payment ${sourceId}` },
        { code: CHART.receivable, debit: 0, credit: gross },
      ];
    } else {
      // Refund events carry the payment's cumulative amount_refunded: post what is new since the last one.
      await tx.execute('select pg_advisory_xact_lock(hashtext(?))', [`erp-refunds:${sourceId}`]);
      const posted = await tx.execute<{ total: string | null }[]>(
        `select sum(amount)::text as total from financial_transactions
          where account_id = ? and livemode = ? and source_type = 'event' and type = 'refund' and source_id = ?`,
        [scope.accountId, scope.livemode, sourceId],
      );
      amount = num(o.amount_refunded) - Number(posted[0]?.total ?? 0);
      if (amount <= 0) return null;
      const gross = toBase(amount);
      type = 'refund';
      accountCode = CHART.returns;
      counterCode = CHART.clearing;
      lines = [
        { code: CHART.returns, debit: gross, credit: 0, description: `Refund of ${sourceId}` },
        { code: CHART.clearing, debit: 0, credit: gross },
      ];
    }
    if (amount <= 0) return null;
    const header: EntryHeader = {
      id, type, amount, currency, baseCurrency: ledger.baseCurrency, baseAmount: toBase(amount), exchangeRate: rate, accountCode,
      counterAccountCode: counterCode, description: `${input.eventType} ${sourceId ?? ''}`.trim(), customerId, projectId: null,
      taxInclusive: true, taxRate: '0', netAmount: amount - taxAmount, taxAmount, paymentTerms: null, transactionDate: date,
      dueDate: null, discountDate: null, discountPercent: null, reversalOfId: null, sourceType: 'event', sourceId, sourceEventId: input.eventId,
      metadata: { event_type: input.eventType },
    };
    await writeEntry(tx, scope, header, lines, null);
    return id;
  }).catch(async (err: unknown) => {
    if (isUniqueViolation(err)) {
      return (await em.findOne(FinancialTransaction, { sourceEventId: input.eventId }, { refresh: true }))?.id ?? null;
    }
    throw err;
  });
}
