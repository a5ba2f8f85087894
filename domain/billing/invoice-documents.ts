import { LockMode } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { conflict, notFound, validationFailed } from '../../platform/errors.ts';
import { DAY_MS, isoDay } from '../../workflows/billing/shared.ts';
import { checkCustomers, Customer } from '../customers/public.ts';
import { recordEvent } from '../events/outbox.ts';
import { scopeColumns, type Scope } from '../scope.ts';
import { Invoice, TaxRate } from './entities.ts';
import { renderInvoicePdf } from './invoice-pdf.ts';
import { InvoiceTemplate } from './invoice-template-entity.ts';
import { nextInvoiceNumber } from './invoice-numbers.ts';
import { resolveTemplate } from './invoice-templates.ts';
import { fromMicro, taxOn, toMicro } from './pricing.ts';
import type { InvoiceLineItem, InvoiceView } from './schemas.ts';
import { invoiceView } from './service.ts';

/**
 * One-off invoices (draft → finalised), gap-free invoice numbers and the invoice PDF.
 *
 * Numbers: `<prefix><000123>`, the prefix from the invoice's template with `{YYYY}` the year of
 * finalisation (UTC). One counter row per account, mode and rendered prefix, incremented by an
 * upsert inside the transaction that finalises the invoice: the row lock orders concurrent
 * finalisations, and a transaction that fails rolls its increment back with it, so numbers have
 * no gaps and no duplicates (a unique index on invoices is the backstop).
 *
 * PDFs: a finalised invoice is rendered once, on its first download, and stored (`invoice_pdfs`);
 * every later download answers the same bytes. A draft is rendered on each download, with a
 * "DRAFT" watermark, and never stored.
 */

export interface DraftInvoiceInput {
  customer_id: string;
  currency: string;
  line_items: { description: string; quantity: number; unit_amount: number }[];
  days_until_due: number;
  tax_jurisdiction?: string | undefined;
  template_id?: string | undefined;
}

/** A one-off draft invoice (no number yet); records `invoice.created`. */
export async function createDraftInvoice(em: EntityManager, scope: Scope, id: string, input: DraftInvoiceInput): Promise<InvoiceView> {
  const existing = await em.findOne(Invoice, { id });
  if (existing) return invoiceView(existing);
  const errors = await checkCustomers(em, [['customer_id', input.customer_id]]);
  if (input.template_id) {
    const t = await em.findOne(InvoiceTemplate, { id: input.template_id });
    if (!t || t.status !== 'active') errors.push({ path: 'template_id', message: `no active invoice template with id '${input.template_id}' exists in this account and mode` });
  }
  if (errors.length) throw validationFailed(errors);
  return em.transactional(async (tx) => {
    const now = new Date();
    const period = { start: now.toISOString(), end: now.toISOString() };
    const rates = input.tax_jurisdiction ? await tx.find(TaxRate, { jurisdiction: input.tax_jurisdiction }, { orderBy: { id: 'asc' } }) : [];
    const lines: InvoiceLineItem[] = input.line_items.map((l) => {
      const amount = l.quantity * l.unit_amount;
      return {
        type: 'one_off' as const, description: l.description, quantity: String(l.quantity), unit_amount: String(l.unit_amount), amount, period,
        tax_amounts: rates.map((r) => ({ tax_rate_id: r.id, amount: taxOn(amount, r.percentage) })),
      };
    });
    const taxes = rates.map((r) => ({
      tax_rate_id: r.id, name: r.name, jurisdiction: r.jurisdiction, percentage: fromMicro(toMicro(r.percentage)),
      taxable_amount: lines.reduce((n, l) => n + l.amount, 0),
      amount: lines.reduce((n, l) => n + (l.tax_amounts.find((t) => t.tax_rate_id === r.id)?.amount ?? 0), 0),
    }));
    const subtotal = lines.reduce((n, l) => n + l.amount, 0);
    const tax = taxes.reduce((n, t) => n + t.amount, 0);
    if (subtotal + tax > Number.MAX_SAFE_INTEGER) throw validationFailed([{ path: 'line_items', message: 'the total exceeds the largest amount an invoice can hold' }]);
    const invoice = tx.create(Invoice, {
      id, ...scopeColumns(scope), customerId: input.customer_id, subscriptionId: null, number: null, templateId: input.template_id ?? null,
      status: 'draft', currency: input.currency, subtotal, tax, amount: subtotal + tax, amountPaid: 0, periodStart: now, periodEnd: now,
      dueDate: isoDay(now.getTime() + input.days_until_due * DAY_MS), lineItems: lines, taxes, paymentMethod: null, autoCollection: false,
      attemptCount: 0, lastPaymentId: null, paidAt: null, finalizedAt: null, createdAt: now, updatedAt: now,
    });
    recordEvent(tx, scope, { type: 'invoice.created', object: invoiceView(invoice), customerId: input.customer_id });
    await tx.flush();
    return invoiceView(invoice);
  });
}

/**
 * Finalises a draft: its template is fixed, it gets the next number of its series, it is open (or
 * paid when it totals zero), and `invoice.finalized` is recorded — all in one transaction.
 * Anything but a draft is 409 `invalid_state_transition`.
 */
export async function finalizeInvoice(em: EntityManager, scope: Scope, id: string, requestId: string | null): Promise<InvoiceView> {
  return em.transactional(async (tx) => {
    const invoice = await tx.findOne(Invoice, { id }, { lockMode: LockMode.PESSIMISTIC_WRITE });
    if (!invoice) throw notFound('invoice', id);
    if (invoice.status !== 'draft') {
      throw conflict('invalid_state_transition', `Invoice ${id} is ${invoice.status}; only a draft can be finalised.`,
        'Retrieve the invoice: it already has its number.', { current_state: invoice.status });
    }
    const template = await resolveTemplate(tx, scope, invoice);
    const now = new Date();
    invoice.number = await nextInvoiceNumber(tx, scope, template.numberPrefix, now);
    invoice.templateId = template.id;
    invoice.status = invoice.amount === 0 ? 'paid' : 'open';
    if (invoice.amount === 0) invoice.paidAt = now;
    invoice.finalizedAt = now;
    invoice.updatedAt = now;
    recordEvent(tx, scope, { type: 'invoice.finalized', object: invoiceView(invoice), customerId: invoice.customerId, requestId });
    await tx.flush();
    return invoiceView(invoice);
  });
}

async function pdfParties(em: EntityManager, scope: Scope, invoice: InvoiceView) {
  const [account] = await em.execute<{ name: string }[]>(`select name from accounts where id = ?`, [scope.accountId]);
  const customer = await em.findOne(Customer, { id: invoice.customer_id });
  return {
    seller: { name: account?.name ?? scope.accountId, lines: [] },
    customer: {
      name: customer?.name ?? customer?.email ?? invoice.customer_id, email: customer?.email ?? null,
      company: customer?.company?.name ?? null, lines: [],
    },
  };
}

/** The invoice's PDF: a draft rendered now (watermarked); a finalised invoice's stored rendering (made on first use). */
export async function invoicePdf(em: EntityManager, scope: Scope, id: string): Promise<{ pdf: Buffer; invoice: InvoiceView; stored: boolean }> {
  const row = await em.findOne(Invoice, { id });
  if (!row) throw notFound('invoice', id);
  const invoice = invoiceView(row);
  if (invoice.status !== 'draft') {
    const [stored] = await em.execute<{ pdf: Buffer }[]>(`select pdf from invoice_pdfs where invoice_id = ?`, [id]);
    if (stored) return { pdf: stored.pdf, invoice, stored: true };
  }
  const template = await resolveTemplate(em, scope, row);
  const pdf = await renderInvoicePdf({ invoice, template, ...(await pdfParties(em, scope, invoice)) });
  if (invoice.status === 'draft') return { pdf, invoice, stored: false };
  // Two first downloads at once: one insert wins, both answer the stored bytes.
  await em.execute(
    `insert into invoice_pdfs (invoice_id, account_id, livemode, template_id, pdf, rendered_at) values (?, ?, ?, ?, ?, now())
     on conflict (invoice_id) do nothing`, [id, scope.accountId, scope.livemode, template.id, pdf]);
  const [stored] = await em.execute<{ pdf: Buffer }[]>(`select pdf from invoice_pdfs where invoice_id = ?`, [id]);
  return { pdf: stored!.pdf, invoice, stored: true };
}
