import { createCanvas, loadImage } from '@napi-rs/canvas';
import { extractText, getDocumentProxy, renderPageAsImage } from 'unpdf';
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

/** A page as pixels: page 1 of `pdf` rendered to a PNG (pdf.js on @napi-rs/canvas, no system tools), then decoded. */
interface Page {
  png: Buffer;
  width: number;
  height: number;
  rgb(x: number, y: number): [number, number, number];
  count(test: (r: number, g: number, b: number, x: number, y: number) => boolean, box?: { x0: number; y0: number; x1: number; y1: number }): number;
}

async function renderPage(pdf: Buffer, scale: number): Promise<Page> {
  // pdf.js takes ownership of the bytes it is given: hand it a copy.
  const png = Buffer.from(await renderPageAsImage(new Uint8Array(pdf), 1, { canvasImport: () => import('@napi-rs/canvas'), scale }));
  const image = await loadImage(png);
  const canvas = createCanvas(image.width, image.height);
  const ctx = canvas.getContext('2d');
  ctx.drawImage(image, 0, 0);
  const data = ctx.getImageData(0, 0, image.width, image.height).data;
  const rgb = (x: number, y: number): [number, number, number] => {
    const i = (y * image.width + x) * 4;
    return [data[i]!, data[i + 1]!, data[i + 2]!];
  };
  return {
    png, width: image.width, height: image.height, rgb,
    count(test, box = { x0: 0, y0: 0, x1: image.width, y1: image.height }) {
      let n = 0;
      for (let y = box.y0; y < box.y1; y++) for (let x = box.x0; x < box.x1; x++) if (test(...rgb(x, y), x, y)) n++;
      return n;
    },
  };
}

const near = (expected: [number, number, number], tolerance: number) => (r: number, g: number, b: number) =>
  Math.abs(r - expected[0]) <= tolerance && Math.abs(g - expected[1]) <= tolerance && Math.abs(b - expected[2]) <= tolerance;
const hex = (colour: string): [number, number, number] => [1, 3, 5].map((i) => parseInt(colour.slice(i, i + 2), 16)) as [number, number, number];

/** A solid 200×100 PNG of one colour, as a template logo. */
function solidLogo(colour: string): string {
  const canvas = createCanvas(200, 100);
  const ctx = canvas.getContext('2d');
  ctx.fillStyle = colour;
  ctx.fillRect(0, 0, 200, 100);
  return canvas.toBuffer('image/png').toString('base64');
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

  it('renders page 1 to a PNG that shows the template: not blank, the logo where the template puts it, the accent bar, DRAFT only on a draft', async () => {
    const customerId = await newCustomer(http, key);
    const LOGO = '#e4007c';
    const ACCENT = '#0a84ff';
    const tpl = await post('/v3/invoice_templates', { name: 'Rendered', logo: { data: solidLogo(LOGO) }, accent_color: ACCENT, memo: 'Thank you.' });
    const inv = await draft(customerId, { template_id: tpl.id });
    const scale = 1.5;
    // The template's layout (domain/billing/invoice-pdf.ts), in PDF points: an A4 page, the logo fitted
    // into 140×60 at (50, 50) (a 2:1 logo: 120×60), an 8 pt accent bar across the top, the watermark
    // across the middle of the page.
    const pt = (n: number) => Math.round(n * scale);
    const logoBox = { x0: pt(50) + 2, y0: pt(50) + 2, x1: pt(170) - 2, y1: pt(110) - 2 };
    const middle = { x0: 0, y0: pt(841.89 / 3), x1: pt(595.28), y1: pt((2 * 841.89) / 3) };
    // The watermark's grey (#d1d5db at 50 % over white); text edges hardly ever land on it exactly.
    const watermarkGrey = near([232, 234, 237], 3);
    const logoColour = near(hex(LOGO), 12);

    const check = async (pdf: Buffer) => {
      const page = await renderPage(pdf, scale);
      expect(page.png.subarray(1, 4).toString()).toBe('PNG');
      expect([page.width, page.height]).toEqual([Math.floor(595.28 * scale), Math.floor(841.89 * scale)]);
      const area = page.width * page.height;
      // Not blank, and not a page of ink either: an invoice is mostly white paper.
      const ink = page.count((r, g, b) => r < 245 || g < 245 || b < 245) / area;
      expect(ink).toBeGreaterThan(0.02);
      expect(ink).toBeLessThan(0.35);
      // The logo: its colour fills its box, and is nowhere else on the page.
      const logoArea = (logoBox.x1 - logoBox.x0) * (logoBox.y1 - logoBox.y0);
      expect(page.count(logoColour, logoBox)).toBe(logoArea);
      expect(page.count(logoColour)).toBeLessThan(logoArea * 1.2);
      // The accent bar across the top, left to right.
      for (const x of [pt(10), pt(300), pt(585)]) expect(near(hex(ACCENT), 8)(...page.rgb(x, pt(3)))).toBe(true);
      return { page, watermark: page.count(watermarkGrey, middle) };
    };

    const drafted = await check((await pdfOf(inv.id)).bytes);
    expect(drafted.watermark).toBeGreaterThan(5_000);
    expect(watermarkGrey(...drafted.page.rgb(Math.floor(drafted.page.width / 2), Math.floor(drafted.page.height / 2)))).toBe(true);

    await post(`/v3/invoices/${inv.id}/finalize`, {}, 200);
    const finalised = await check((await pdfOf(inv.id)).bytes);
    expect(finalised.watermark).toBeLessThan(drafted.watermark / 10);
    expect(watermarkGrey(...finalised.page.rgb(Math.floor(finalised.page.width / 2), Math.floor(finalised.page.height / 2)))).toBe(false);
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
