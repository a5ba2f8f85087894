import { extractText, getDocumentProxy } from 'unpdf';
import { describe, expect, it } from 'vitest';
import { nextInvoiceNumber } from '../../domain/billing/invoice-numbers.ts';
import { scopedEm } from '../../domain/scope.ts';
import type { TestPlatform } from '../support/platform.ts';
import { usePlatform, type Http } from '../support/use-platform.ts';
import { advance, card, invoices, newClock, newCustomer, newPlan } from './support.ts';

let platform: TestPlatform;
let http: Http;
let key: string;
let accountId: string;
usePlatform({ worker: true, ownAccount: true }, (t) => ({ platform, http, key, accountId } = t));

/** A valid 1×1 PNG. */
const PNG_1PX = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';

async function post(path: string, body: unknown, status = 201) {
  const res = await http(path, { key, body });
  expect(res.status, `${path}: ${res.text}`).toBe(status);
  return res.body;
}

/** The PDF's bytes (the contract-checked request first) and its text. */
async function pdfOf(invoiceId: string): Promise<{ bytes: Buffer; text: string; headers: Headers }> {
  const checked = await http(`/v3/invoices/${invoiceId}/pdf`, { key });
  expect(checked.status, checked.text.slice(0, 300)).toBe(200);
  // What a PDF client sends: only the PDF is acceptable.
  const res = await fetch(`${platform.url}/v3/invoices/${invoiceId}/pdf`, { headers: { authorization: `Bearer ${key}`, accept: 'application/pdf' } });
  expect(res.status).toBe(200);
  const bytes = Buffer.from(await res.arrayBuffer());
  expect(bytes.subarray(0, 5).toString()).toBe('%PDF-');
  const doc = await getDocumentProxy(new Uint8Array(bytes));
  const { text } = await extractText(doc, { mergePages: true });
  return { bytes, text: text.replace(/\s+/g, ' '), headers: res.headers };
}

const draft = (customerId: string, extra: Record<string, unknown> = {}) => post('/v3/invoices', {
  customer_id: customerId, currency: 'EUR', line_items: [{ description: 'Consulting', quantity: 3, unit_amount: 41150 }, { description: 'Setup fee', quantity: 1, unit_amount: 9900 }],
  ...extra,
});

describe('invoice templates', () => {
  it('creates, validates, keeps one default, archives', async () => {
    const first = await post('/v3/invoice_templates', { name: 'Plain' });
    expect(first).toMatchObject({ object: 'invoice_template', is_default: true, locale: 'en-US', number_prefix: 'INV-{YYYY}-', logo: null, status: 'active' });
    expect(first.id).toMatch(/^itpl_/);
    const branded = await post('/v3/invoice_templates', {
      name: 'Branded', is_default: true, logo: { data: PNG_1PX }, accent_color: '#0a84ff', locale: 'de-DE', number_prefix: 'RE-{YYYY}-',
      footer: 'Musterfirma GmbH · Amtsgericht Berlin HRB 12345', memo: 'Vielen Dank für Ihren Auftrag!',
      custom_fields: [{ name: 'USt-IdNr.', value: 'DE123456789' }], show: { customer_email: false },
    });
    expect(branded).toMatchObject({ is_default: true, logo: { content_type: 'image/png', size: 70 }, show: { customer_email: false, tax_breakdown: true } });
    expect((await http(`/v3/invoice_templates/${first.id}`, { key })).body.is_default).toBe(false);
    const defaults = (await http('/v3/invoice_templates?limit=100', { key })).body.data.filter((t: { is_default: boolean }) => t.is_default);
    expect(defaults.map((t: { id: string }) => t.id)).toEqual([branded.id]);

    const bad = await http('/v3/invoice_templates', {
      key, body: { name: 'Bad', accent_color: 'blue', locale: 'xx-!!', number_prefix: 'INV-{MM}-', logo: { data: Buffer.from('GIF89a....').toString('base64') } },
    });
    expect(bad.status).toBe(422);
    expect(bad.body.errors.map((e: { path: string }) => e.path).sort()).toEqual(['accent_color', 'locale', 'number_prefix']);
    const notImage = await http('/v3/invoice_templates', { key, body: { name: 'Gif', logo: { data: Buffer.from('GIF89a....').toString('base64') } } });
    expect(notImage.status).toBe(422);
    expect(notImage.body.errors).toEqual([{ path: 'logo.data', message: 'the logo must be a PNG or JPEG image' }]);
    const big = Buffer.concat([Buffer.from(PNG_1PX, 'base64'), Buffer.alloc(300 * 1024)]).toString('base64');
    const tooBig = await http('/v3/invoice_templates', { key, body: { name: 'Huge', logo: { data: big } } });
    expect(tooBig.status).toBe(422);
    expect(tooBig.body.errors[0].path).toBe('logo.data');

    const refused = await http(`/v3/invoice_templates/${branded.id}/archive`, { key, method: 'POST', body: {} });
    expect(refused.status).toBe(409);
    expect(refused.body.code).toBe('default_template');
    const archived = await post(`/v3/invoice_templates/${first.id}/archive`, {}, 200);
    expect(archived).toMatchObject({ status: 'archived', is_default: false });
    const patchArchived = await http(`/v3/invoice_templates/${first.id}`, { key, method: 'PATCH', body: { name: 'x' } });
    expect(patchArchived.status).toBe(409);
    expect(patchArchived.body).toMatchObject({ code: 'invalid_state_transition', current_state: 'archived' });
    expect((await http('/v3/invoice_templates/itpl_nope', { key })).status).toBe(404);
  });
});

describe('invoices: drafts, gap-free numbers, PDFs', () => {
  it('renders a draft with a watermark, numbers it at finalisation and stores the finalised PDF once', async () => {
    const customerId = await newCustomer(http, key);
    const tpl = await post('/v3/invoice_templates', {
      name: 'German', locale: 'de-DE', number_prefix: 'DE-{YYYY}-', memo: 'Zahlbar innerhalb von 30 Tagen.',
      custom_fields: [{ name: 'USt-IdNr.', value: 'DE999999999' }], logo: { data: PNG_1PX },
    });
    await post('/v3/tax_rates', { jurisdiction: 'DE', name: 'USt', percentage: '19' });
    const inv = await draft(customerId, { template_id: tpl.id, tax_jurisdiction: 'DE' });
    expect(inv).toMatchObject({ status: 'draft', number: null, subscription_id: null, subtotal: 133350, tax: 25337, amount: 158687, finalized_at: null });

    const draftPdf = await pdfOf(inv.id);
    expect(draftPdf.headers.get('content-type')).toBe('application/pdf');
    expect(draftPdf.headers.get('cache-control')).toBe('no-store');
    expect(draftPdf.text).toContain('DRAFT');
    expect(draftPdf.text).toContain('1.234,50 €'); // 3 × 411,50 in de-DE
    expect(draftPdf.text).toContain('1.586,87 €');
    expect(draftPdf.text).toContain('USt (DE, 19 %)');
    expect(draftPdf.text).toContain('USt-IdNr.: DE999999999');
    expect(draftPdf.text).toContain('Zahlbar innerhalb von 30 Tagen.');
    expect((await platform.sql('select 1 from invoice_pdfs where invoice_id = $1', [inv.id]))).toHaveLength(0);

    const finalized = await post(`/v3/invoices/${inv.id}/finalize`, {}, 200);
    const year = new Date().getUTCFullYear();
    expect(finalized).toMatchObject({ status: 'open', number: `DE-${year}-000001`, template_id: tpl.id });
    const again = await http(`/v3/invoices/${inv.id}/finalize`, { key, method: 'POST', body: {} });
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ code: 'invalid_state_transition', current_state: 'open' });
    const [event] = await platform.sql<{ data: any }>(`select data from events where type = 'invoice.finalized' and data->'object'->>'id' = $1`, [inv.id]);
    expect(event!.data.object.number).toBe(`DE-${year}-000001`);

    const final = await pdfOf(inv.id);
    expect(final.text).not.toContain('DRAFT');
    expect(final.text).toContain(`DE-${year}-000001`);
    expect(final.headers.get('content-disposition')).toBe(`inline; filename="DE-${year}-000001.pdf"`);
    // Stored once: a later change of the template does not change the finalised invoice's PDF.
    await http(`/v3/invoice_templates/${tpl.id}`, { key, method: 'PATCH', body: { memo: 'Neuer Text' } });
    const later = await pdfOf(inv.id);
    expect(later.bytes.equals(final.bytes)).toBe(true);
    expect((await platform.sql('select 1 from invoice_pdfs where invoice_id = $1', [inv.id]))).toHaveLength(1);

    const badDraft = await http('/v3/invoices', { key, body: { customer_id: 'cus_nope', currency: 'EUR', line_items: [{ description: 'x', quantity: 0, unit_amount: 1.5 }] } });
    expect(badDraft.status).toBe(422);
    expect(badDraft.body.errors.map((e: { path: string }) => e.path).sort()).toEqual(['line_items.0.quantity', 'line_items.0.unit_amount']);
    const unknownCustomer = await http('/v3/invoices', { key, body: { customer_id: 'cus_nope', currency: 'EUR', line_items: [{ description: 'x', quantity: 1, unit_amount: 1 }] } });
    expect(unknownCustomer.status).toBe(422);
    expect(unknownCustomer.body.errors[0].path).toBe('customer_id');
    expect((await http('/v3/invoices/inv_nope/pdf', { key })).status).toBe(404);
    // Accept: application/pdf is for the routes that answer PDFs; a JSON route refuses it.
    const pdfOnly = await http('/v3/invoices', { key, headers: { accept: 'application/pdf' } });
    expect(pdfOnly.status).toBe(406);
    expect(pdfOnly.body.code).toBe('not_acceptable');
    const wavForPdf = await http('/v3/invoices/inv_nope/pdf', { key, headers: { accept: 'audio/wav' } });
    expect(wavForPdf.status).toBe(406);
    expect(wavForPdf.body.suggestion).toContain('application/pdf');
  });

  it('numbers parallel finalisations gap-free and without duplicates; a double finalisation wins once', async () => {
    const customerId = await newCustomer(http, key);
    const tpl = await post('/v3/invoice_templates', { name: 'Parallel', number_prefix: 'PAR-' });
    const drafts = await Promise.all(Array.from({ length: 8 }, () => draft(customerId, { template_id: tpl.id })));
    const twice = drafts[0]!.id;
    // Nine finalisations at once (the key's concurrency limit is 10), one of them a second finalisation of the same draft.
    const results = await Promise.all([...drafts, drafts[0]!].map((d) => http(`/v3/invoices/${d.id}/finalize`, { key, method: 'POST', body: {} })));
    expect(results.map((r) => r.status).sort()).toEqual([...Array(8).fill(200), 409]);
    const refused = results.filter((r) => r.status === 409);
    expect(refused).toHaveLength(1);
    expect(refused[0]!.body.code).toBe('invalid_state_transition');
    const numbers = results.filter((r) => r.status === 200).map((r) => r.body.number as string).sort();
    expect(numbers).toEqual(Array.from({ length: 8 }, (_, i) => `PAR-${String(i + 1).padStart(6, '0')}`));
    expect(new Set(results.filter((r) => r.status === 200 && r.body.id === twice).map((r) => r.body.number)).size).toBe(1);
  });

  it('takes no number when the finalising transaction fails (the counter rolls back with it)', async () => {
    const scope = { accountId, livemode: false };
    const at = new Date('2040-06-01T00:00:00Z');
    const first = await scopedEm(platform.orm, scope).transactional((tx) => nextInvoiceNumber(tx, scope, 'RB-{YYYY}-', at));
    await expect(scopedEm(platform.orm, scope).transactional(async (tx) => {
      expect(await nextInvoiceNumber(tx, scope, 'RB-{YYYY}-', at)).toBe('RB-2040-000002');
      throw new Error('the invoice could not be written');
    })).rejects.toThrow('could not be written');
    const next = await scopedEm(platform.orm, scope).transactional((tx) => nextInvoiceNumber(tx, scope, 'RB-{YYYY}-', at));
    expect([first, next]).toEqual(['RB-2040-000001', 'RB-2040-000002']);
    // Another year is another series; the live mode has its own.
    expect(await scopedEm(platform.orm, scope).transactional((tx) => nextInvoiceNumber(tx, scope, 'RB-{YYYY}-', new Date('2041-01-01T00:00:00Z')))).toBe('RB-2041-000001');
    expect(await scopedEm(platform.orm, { accountId, livemode: true }).transactional((tx) => nextInvoiceNumber(tx, { accountId, livemode: true }, 'RB-{YYYY}-', at))).toBe('RB-2040-000001');
  });

  it('numbers subscription invoices when issued, in the year of the subscription clock, with the subscription\'s template', async () => {
    const customerId = await newCustomer(http, key);
    const plan = await newPlan(http, key, { amount: 2500 });
    const clock = await newClock(http, key, '2031-01-01T00:00:00Z');
    const tpl = await post('/v3/invoice_templates', { name: 'Subs', number_prefix: 'SUB-{YYYY}-', locale: 'en-US' });
    const sub = await post('/v3/subscriptions', { customer_id: customerId, plan_id: plan.id, auto_collection: true, payment_method: card(), test_clock: clock });
    const assigned = await http(`/v3/subscriptions/${sub.id}/invoice_template`, { key, method: 'PUT', body: { template_id: tpl.id } });
    expect(assigned.status, assigned.text).toBe(200);
    expect(assigned.body).toEqual({ object: 'invoice_template_assignment', livemode: false, subject_id: sub.id, template_id: tpl.id });
    await advance(http, key, clock, '2031-03-02T00:00:00Z');
    const issued = await invoices(http, key, sub.id);
    expect(issued.length).toBeGreaterThanOrEqual(2);
    expect(issued.map((i) => [i.number, i.template_id])).toEqual(issued.map((_, n) => [`SUB-2031-${String(n + 1).padStart(6, '0')}`, tpl.id]));
    const pdf = await pdfOf(issued[0].id);
    expect(pdf.text).toContain('SUB-2031-000001');
    expect(pdf.text).toContain('$25.00');
    expect(pdf.text).toContain('visa **** 4242');
    expect(pdf.text).toContain('January 1, 2031');
    const unknown = await http(`/v3/customers/${customerId}/invoice_template`, { key, method: 'PUT', body: { template_id: 'itpl_nope' } });
    expect(unknown.status).toBe(422);
    expect(unknown.body.errors[0].path).toBe('template_id');
  });
});
