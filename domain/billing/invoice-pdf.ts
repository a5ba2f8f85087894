import type PDFDocumentClass from 'pdfkit';
import { exponent } from '../money.ts';
import type { InvoiceView } from './schemas.ts';
import type { TemplateSettings } from './invoice-templates.ts';

/**
 * Renders an invoice as a PDF with pdfkit: header (logo, title, number, dates), seller and
 * customer blocks, line items, taxes, totals, payment method, memo and footer, amounts and dates
 * formatted for the template's locale (`Intl`). A draft carries a diagonal "DRAFT" watermark.
 * The output is deterministic for the same input (the document's dates are the invoice's), so a
 * stored PDF and a re-render agree.
 *
 * Fonts: the PDF standard fonts (Helvetica), i.e. Windows-1252 text; characters outside it (CJK
 * names, for instance) are replaced by "?" — embedding a Unicode font is a follow-up.
 */

export interface PdfParty {
  name: string;
  lines: string[];
}

export interface InvoicePdfInput {
  invoice: InvoiceView;
  template: TemplateSettings;
  seller: PdfParty;
  customer: PdfParty & { email: string | null; company: string | null };
}

const A4: [number, number] = [595.28, 841.89];
const MARGIN = 50;

/** Windows-1252, the encoding of the standard fonts; anything else becomes "?". */
const CP1252_EXTRA = new Set('€‚ƒ„…†‡ˆ‰Š‹ŒŽ‘’“”•–—˜™š›œžŸ');
function printable(text: string): string {
  return text
    .replace(/[\u202f\u2009]/g, '\u00a0') // Intl's narrow spaces (fr-FR groups) → no-break space
    .replace(/[\u2212]/g, '-')
    .replace(/[^\t\n\r\u0020-\u007e\u00a0-\u00ff]/g, (c) => (CP1252_EXTRA.has(c) ? c : '?'));
}

export function formatMoney(minor: number, currency: string, locale: string): string {
  const exp = exponent(currency);
  return new Intl.NumberFormat(locale, { style: 'currency', currency, minimumFractionDigits: exp, maximumFractionDigits: exp }).format(minor / 10 ** exp);
}

export function formatDate(iso: string, locale: string): string {
  const date = /^\d{4}-\d{2}-\d{2}$/.test(iso) ? new Date(`${iso}T00:00:00Z`) : new Date(iso);
  return new Intl.DateTimeFormat(locale, { year: 'numeric', month: 'long', day: 'numeric', timeZone: 'UTC' }).format(date);
}

/** The labels, in English; the locale drives number and date formats. */
const LABELS = {
  invoice: 'Invoice', draft: 'DRAFT', number: 'Invoice number', issued: 'Date of issue', due: 'Due date', period: 'Service period',
  from: 'From', billTo: 'Bill to', description: 'Description', qty: 'Qty', unit: 'Unit price', amount: 'Amount',
  subtotal: 'Subtotal', total: 'Total', paid: 'Amount paid', amountDue: 'Amount due', paymentMethod: 'Payment method',
};

export async function renderInvoicePdf(input: InvoicePdfInput): Promise<Buffer> {
  const { invoice, template, seller, customer } = input;
  const locale = template.locale;
  const money = (minor: number) => printable(formatMoney(minor, invoice.currency, locale));
  const date = (iso: string) => printable(formatDate(iso, locale));
  const isDraft = invoice.status === 'draft';
  const stamp = new Date(invoice.finalized_at ?? invoice.created_at);

  // Loaded on first use: most processes never render an invoice (pdfkit is ~7 MB of heap).
  const PDFDocument: typeof PDFDocumentClass = (await import('pdfkit')).default;
  const doc = new PDFDocument({
    size: A4, margin: MARGIN, compress: true,
    info: {
      Title: `${LABELS.invoice} ${invoice.number ?? invoice.id}`, Author: printable(seller.name), Subject: invoice.id,
      Producer: 'Business Platform', Creator: 'Business Platform', CreationDate: stamp, ModDate: stamp,
    },
  });
  const chunks: Buffer[] = [];
  doc.on('data', (c: Buffer) => chunks.push(c));
  const done = new Promise<Buffer>((resolve, reject) => {
    doc.on('end', () => resolve(Buffer.concat(chunks)));
    doc.on('error', reject);
  });

  const accent = template.accentColor;
  const width = A4[0] - 2 * MARGIN;

  if (isDraft) {
    doc.save().fillColor('#d1d5db').fillOpacity(0.5).fontSize(120).font('Helvetica-Bold')
      .rotate(-35, { origin: [A4[0] / 2, A4[1] / 2] })
      .text(LABELS.draft, 60, A4[1] / 2 - 60, { width: A4[0] - 120, align: 'center', lineBreak: false })
      .restore();
    doc.fillOpacity(1);
  }

  // Header: logo left, title and number right.
  doc.rect(0, 0, A4[0], 8).fill(accent);
  let y = MARGIN;
  if (template.logo) {
    try {
      doc.image(template.logo, MARGIN, y, { fit: [140, 60] });
    } catch {
      // A logo pdfkit cannot read (a truncated PNG) is left out rather than failing the invoice.
    }
  }
  doc.fillColor(accent).font('Helvetica-Bold').fontSize(22).text(LABELS.invoice, MARGIN, y, { width, align: 'right' });
  doc.fillColor('#111827').font('Helvetica').fontSize(10);
  const meta: [string, string][] = [[LABELS.number, invoice.number ?? `${LABELS.draft} (${invoice.id})`], [LABELS.issued, date(invoice.finalized_at ?? invoice.created_at)]];
  if (template.show.due_date) meta.push([LABELS.due, date(invoice.due_date)]);
  if (template.show.period && invoice.subscription_id) meta.push([LABELS.period, `${date(invoice.period_start)} – ${date(invoice.period_end)}`]);
  y += 30;
  for (const [label, value] of meta) {
    doc.font('Helvetica').fontSize(10).text(`${label}: ${printable(value)}`, MARGIN, y, { width, align: 'right' });
    y = doc.y + 2;
  }

  // Seller and customer blocks.
  y = Math.max(y, MARGIN + 70) + 20;
  const half = width / 2 - 10;
  const block = (x: number, title: string, lines: string[]) => {
    doc.fillColor(accent).font('Helvetica-Bold').fontSize(9).text(title.toUpperCase(), x, y, { width: half });
    doc.fillColor('#111827').font('Helvetica').fontSize(10);
    for (const line of lines) doc.text(printable(line), x, doc.y + 2, { width: half });
    return doc.y;
  };
  const sellerLines = [seller.name, ...seller.lines, ...template.customFields.map((f) => `${f.name}: ${f.value}`)];
  const customerLines = [customer.name, ...(template.show.customer_company && customer.company ? [customer.company] : []),
    ...(template.show.customer_email && customer.email ? [customer.email] : []), ...customer.lines];
  const bottom = Math.max(block(MARGIN, LABELS.from, sellerLines), block(MARGIN + half + 20, LABELS.billTo, customerLines));

  // Line items.
  y = bottom + 25;
  const showQty = template.show.line_item_quantity;
  const cols = showQty ? { desc: 0, qty: 0.55, unit: 0.65, amount: 0.82 } : { desc: 0, qty: -1, unit: -1, amount: 0.82 };
  doc.rect(MARGIN, y - 4, width, 18).fill(accent);
  doc.fillColor('#ffffff').font('Helvetica-Bold').fontSize(9);
  doc.text(LABELS.description, MARGIN + 4, y, { width: width * 0.5 });
  if (showQty) {
    doc.text(LABELS.qty, MARGIN + width * cols.qty, y, { width: width * 0.1, align: 'right' });
    doc.text(LABELS.unit, MARGIN + width * cols.unit, y, { width: width * 0.16, align: 'right' });
  }
  doc.text(LABELS.amount, MARGIN + width * cols.amount, y, { width: width * 0.18 - 4, align: 'right' });
  y += 20;
  doc.fillColor('#111827').font('Helvetica').fontSize(10);
  for (const line of invoice.line_items) {
    if (y > A4[1] - 200) {
      doc.addPage();
      y = MARGIN;
    }
    doc.text(printable(line.description), MARGIN + 4, y, { width: width * (showQty ? 0.52 : 0.78) });
    const rowBottom = doc.y;
    if (showQty) {
      doc.text(printable(line.quantity), MARGIN + width * cols.qty, y, { width: width * 0.1, align: 'right' });
      doc.text(line.unit_amount === null ? '' : money(Number(line.unit_amount)), MARGIN + width * cols.unit, y, { width: width * 0.16, align: 'right' });
    }
    doc.text(money(line.amount), MARGIN + width * cols.amount, y, { width: width * 0.18 - 4, align: 'right' });
    y = Math.max(rowBottom, doc.y) + 6;
    doc.moveTo(MARGIN, y - 3).lineTo(MARGIN + width, y - 3).lineWidth(0.5).strokeColor('#e5e7eb').stroke();
  }

  // Taxes and totals.
  y += 8;
  const totals: [string, string, boolean][] = [[LABELS.subtotal, money(invoice.subtotal), false]];
  if (template.show.tax_breakdown) {
    for (const t of invoice.taxes) totals.push([`${printable(t.name)} (${t.jurisdiction}, ${printable(new Intl.NumberFormat(locale, { maximumFractionDigits: 4 }).format(Number(t.percentage)))} %)`, money(t.amount), false]);
  } else if (invoice.tax) {
    totals.push(['Tax', money(invoice.tax), false]);
  }
  totals.push([LABELS.total, money(invoice.amount), true]);
  if (invoice.amount_paid) totals.push([LABELS.paid, money(invoice.amount_paid), false]);
  totals.push([LABELS.amountDue, money(invoice.amount_due), true]);
  for (const [label, value, bold] of totals) {
    doc.font(bold ? 'Helvetica-Bold' : 'Helvetica').fontSize(10);
    doc.text(label, MARGIN + width * 0.45, y, { width: width * 0.35, align: 'right' });
    doc.text(value, MARGIN + width * 0.8, y, { width: width * 0.2 - 4, align: 'right' });
    y = doc.y + 4;
  }

  if (template.show.payment_method && invoice.payment_method) {
    y += 10;
    doc.font('Helvetica').fontSize(10).text(`${LABELS.paymentMethod}: ${printable(invoice.payment_method)}`, MARGIN, y, { width });
    y = doc.y;
  }
  if (template.memo) {
    y += 16;
    doc.font('Helvetica-Oblique').fontSize(10).fillColor('#374151').text(printable(template.memo), MARGIN, y, { width });
  }
  if (template.footer) {
    doc.font('Helvetica').fontSize(8).fillColor('#6b7280').text(printable(template.footer), MARGIN, A4[1] - MARGIN - 30, { width, align: 'center', lineBreak: false });
  }
  doc.end();
  return done;
}
