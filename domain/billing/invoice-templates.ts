import { createHash } from 'node:crypto';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { z } from 'zod';
import { conflict, notFound, validationFailed } from '../../platform/errors.ts';
import { readScopedOr404, scopeColumns, type Scope } from '../scope.ts';
import { InvoiceTemplate } from './invoice-template-entity.ts';

/**
 * Invoice templates: how an account's invoices look (logo, accent colour, footer and memo, locale,
 * custom fields such as a VAT number, which fields to show) and how they are numbered (the
 * prefix). One template per account and mode is the default (a partial unique index); a customer
 * or a subscription may name its own (`invoice_template_assignments`). An invoice renders with, in
 * order: its own `template_id`, its subscription's, its customer's, the default, the built-in one.
 */

/** The largest logo accepted (decoded bytes). */
export const MAX_LOGO_BYTES = 256 * 1024;
export const DEFAULT_PREFIX = 'INV-{YYYY}-';

export const SHOW_FIELDS = ['customer_email', 'customer_company', 'period', 'line_item_quantity', 'tax_breakdown', 'payment_method', 'due_date'] as const;
export type ShowFields = Record<(typeof SHOW_FIELDS)[number], boolean>;
export const DEFAULT_SHOW: ShowFields = Object.fromEntries(SHOW_FIELDS.map((f) => [f, true])) as ShowFields;

export interface TemplateSettings {
  id: string | null;
  name: string;
  logo: Buffer | null;
  accentColor: string;
  footer: string | null;
  memo: string | null;
  locale: string;
  numberPrefix: string;
  customFields: { name: string; value: string }[];
  show: ShowFields;
}

/** What an invoice renders with when the account has no template. */
export const BUILT_IN_TEMPLATE: TemplateSettings = {
  id: null, name: 'Built-in', logo: null, accentColor: '#1f2937', footer: null, memo: null, locale: 'en-US',
  numberPrefix: DEFAULT_PREFIX, customFields: [], show: DEFAULT_SHOW,
};

// ---- Schemas ---------------------------------------------------------------------------------

const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const JPEG = Buffer.from([0xff, 0xd8, 0xff]);

/** The logo's decoded bytes and media type, or a message for the field. */
export function decodeLogo(data: string): { bytes: Buffer; contentType: 'image/png' | 'image/jpeg' } | string {
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(data)) return 'expected base64 (standard alphabet, no data: URL prefix)';
  const bytes = Buffer.from(data, 'base64');
  if (bytes.length === 0) return 'the logo is empty';
  if (bytes.length > MAX_LOGO_BYTES) return `the logo is ${bytes.length} bytes; at most ${MAX_LOGO_BYTES} (256 KiB) are accepted — scale it down`;
  if (bytes.subarray(0, 8).equals(PNG)) return { bytes, contentType: 'image/png' };
  if (bytes.subarray(0, 3).equals(JPEG)) return { bytes, contentType: 'image/jpeg' };
  return 'the logo must be a PNG or JPEG image';
}

const locale = z.string().min(2).max(35).refine((l) => {
  try {
    return Intl.NumberFormat.supportedLocalesOf([l]).length === 1;
  } catch {
    return false;
  }
}, 'expected a BCP 47 locale the server can format for, such as en-US, de-DE or fr-FR');

const prefix = z.string().min(1).max(30)
  .regex(/^[A-Za-z0-9._/{}-]+$/, 'letters, digits, . _ / - and the placeholder {YYYY} (the year of finalisation)')
  .refine((p) => p.replace('{YYYY}', '').indexOf('{') === -1 && p.replace('{YYYY}', '').indexOf('}') === -1, 'the only placeholder is {YYYY}');

export const templateBody = {
  name: z.string().trim().min(1).max(200),
  logo: z.strictObject({ data: z.string().max(Math.ceil((MAX_LOGO_BYTES * 4) / 3) + 8, `a logo is at most ${MAX_LOGO_BYTES} bytes (256 KiB) before base64`).describe('Base64 of a PNG or JPEG, at most 256 KiB decoded.') }).nullable(),
  accent_color: z.string().regex(/^#[0-9A-Fa-f]{6}$/, 'expected a hex colour such as #0a84ff'),
  footer: z.string().max(2000).nullable(),
  memo: z.string().max(2000).nullable(),
  locale,
  number_prefix: prefix.describe('Invoice numbers are <prefix><6-digit sequence>, e.g. INV-{YYYY}- gives INV-2026-000123; one gap-free sequence per account, mode and rendered prefix.'),
  custom_fields: z.array(z.strictObject({ name: z.string().trim().min(1).max(40), value: z.string().max(200) })).max(10).describe('Shown in the seller block, e.g. VAT ID, address lines.'),
  show: z.strictObject(Object.fromEntries(SHOW_FIELDS.map((f) => [f, z.boolean().optional()])) as Record<(typeof SHOW_FIELDS)[number], z.ZodOptional<z.ZodBoolean>>).describe('Which fields the PDF shows (each default true).'),
  is_default: z.boolean(),
};

export const invoiceTemplateSchema = z.object({
  id: z.string(), object: z.literal('invoice_template'), livemode: z.boolean(), name: z.string(),
  logo: z.object({ content_type: z.string(), size: z.number().int(), sha256: z.string() }).nullable(),
  accent_color: z.string(), footer: z.string().nullable(), memo: z.string().nullable(), locale: z.string(), number_prefix: z.string(),
  custom_fields: z.array(z.object({ name: z.string(), value: z.string() })),
  show: z.object(Object.fromEntries(SHOW_FIELDS.map((f) => [f, z.boolean()])) as Record<(typeof SHOW_FIELDS)[number], z.ZodBoolean>),
  is_default: z.boolean(), status: z.enum(['active', 'archived']), metadata: z.record(z.string(), z.string()),
  created_at: z.iso.datetime(), updated_at: z.iso.datetime(),
}).meta({ id: 'InvoiceTemplate' });
export type InvoiceTemplateView = z.output<typeof invoiceTemplateSchema>;

export function templateView(t: InvoiceTemplate): InvoiceTemplateView {
  return {
    id: t.id, object: 'invoice_template', livemode: t.livemode, name: t.name,
    logo: t.logo ? { content_type: t.logoContentType ?? 'image/png', size: t.logo.length, sha256: createHash('sha256').update(t.logo).digest('hex') } : null,
    accent_color: t.accentColor, footer: t.footer ?? null, memo: t.memo ?? null, locale: t.locale, number_prefix: t.numberPrefix,
    custom_fields: t.customFields, show: { ...DEFAULT_SHOW, ...t.show }, is_default: t.isDefault, status: t.status, metadata: t.metadata,
    created_at: t.createdAt.toISOString(), updated_at: t.updatedAt.toISOString(),
  };
}

export interface TemplateInput {
  name?: string;
  logo?: { data: string } | null;
  accent_color?: string;
  footer?: string | null;
  memo?: string | null;
  locale?: string;
  number_prefix?: string;
  custom_fields?: { name: string; value: string }[];
  show?: Partial<ShowFields>;
  is_default?: boolean;
  metadata?: Record<string, string | null>;
}

function logoOf(input: { data: string } | null | undefined): { bytes: Buffer | null; contentType: string | null } | undefined {
  if (input === undefined) return undefined;
  if (input === null) return { bytes: null, contentType: null };
  const decoded = decodeLogo(input.data);
  if (typeof decoded === 'string') throw validationFailed([{ path: 'logo.data', message: decoded }]);
  return { bytes: decoded.bytes, contentType: decoded.contentType };
}

async function clearDefault(tx: EntityManager, scope: Scope, except: string): Promise<void> {
  await tx.execute(
    `update invoice_templates set is_default = false, updated_at = now() where account_id = ? and livemode = ? and is_default and id <> ?`,
    [scope.accountId, scope.livemode, except]);
}

/** Creates a template; the account's first one (or one sent with is_default) becomes the default. */
export async function createTemplate(em: EntityManager, scope: Scope, id: string, input: TemplateInput): Promise<InvoiceTemplateView> {
  const logo = logoOf(input.logo);
  return em.transactional(async (tx) => {
    const existing = await tx.findOne(InvoiceTemplate, { id });
    if (existing) return templateView(existing); // the same Idempotency-Key after a crash
    // Serialises default changes of one account and mode (the partial unique index is the backstop).
    await tx.execute(`select pg_advisory_xact_lock(hashtext(?))`, [`invoice-template-default:${scope.accountId}:${scope.livemode}`]);
    const hasDefault = (await tx.count(InvoiceTemplate, { isDefault: true })) > 0;
    const isDefault = input.is_default ?? !hasDefault;
    if (isDefault) await clearDefault(tx, scope, id);
    const t = tx.create(InvoiceTemplate, {
      id, ...scopeColumns(scope), name: input.name!, logo: logo?.bytes ?? null, logoContentType: logo?.contentType ?? null,
      accentColor: input.accent_color ?? BUILT_IN_TEMPLATE.accentColor, footer: input.footer ?? null, memo: input.memo ?? null,
      locale: input.locale ?? BUILT_IN_TEMPLATE.locale, numberPrefix: input.number_prefix ?? DEFAULT_PREFIX,
      customFields: input.custom_fields ?? [], show: { ...DEFAULT_SHOW, ...stripUndefined(input.show ?? {}) }, isDefault, status: 'active',
      metadata: Object.fromEntries(Object.entries(input.metadata ?? {}).filter((e): e is [string, string] => !!e[1])),
      createdAt: new Date(), updatedAt: new Date(),
    });
    await tx.flush();
    return templateView(t);
  });
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

export async function findTemplate(em: EntityManager, id: string): Promise<InvoiceTemplate> {
  const t = await em.findOne(InvoiceTemplate, { id });
  if (!t) throw notFound('invoice template', id);
  return t;
}

/** Invoice template by id for GET /v3/invoice_templates/{id}: one prepared statement, no EntityManager (readScopedOr404). */
export async function readTemplate(orm: MikroORM, scope: Scope, id: string): Promise<InvoiceTemplateView> {
  return templateView(await readScopedOr404(orm, scope, InvoiceTemplate, id, 'invoice template'));
}

export async function listTemplates(
  em: EntityManager, filters: { status?: ('active' | 'archived')[] },
  page: { where: Record<string, unknown>; direction: 'asc' | 'desc'; limit: number },
): Promise<InvoiceTemplateView[]> {
  const where: Record<string, unknown>[] = [page.where];
  if (filters.status) where.push({ status: { $in: filters.status } });
  return (await em.find(InvoiceTemplate, { $and: where }, { orderBy: { id: page.direction }, limit: page.limit + 1 })).map(templateView);
}

function refuseArchived(t: InvoiceTemplate): void {
  if (t.status === 'archived') {
    throw conflict('invalid_state_transition', `Invoice template ${t.id} is archived.`, 'Create a new template; an archived one no longer changes.', { current_state: 'archived' });
  }
}

export async function updateTemplate(em: EntityManager, scope: Scope, id: string, input: TemplateInput): Promise<InvoiceTemplateView> {
  const logo = logoOf(input.logo);
  return em.transactional(async (tx) => {
    await tx.execute(`select pg_advisory_xact_lock(hashtext(?))`, [`invoice-template-default:${scope.accountId}:${scope.livemode}`]);
    const t = await findTemplate(tx, id);
    refuseArchived(t);
    if (input.is_default === false && t.isDefault) {
      throw validationFailed([{ path: 'is_default', message: 'an account always has one default while it has templates; make another template the default instead' }]);
    }
    if (input.is_default && !t.isDefault) {
      await clearDefault(tx, scope, id);
      t.isDefault = true;
    }
    if (input.name !== undefined) t.name = input.name;
    if (logo) {
      t.logo = logo.bytes;
      t.logoContentType = logo.contentType;
    }
    if (input.accent_color !== undefined) t.accentColor = input.accent_color;
    if (input.footer !== undefined) t.footer = input.footer;
    if (input.memo !== undefined) t.memo = input.memo;
    if (input.locale !== undefined) t.locale = input.locale;
    if (input.number_prefix !== undefined) t.numberPrefix = input.number_prefix;
    if (input.custom_fields !== undefined) t.customFields = input.custom_fields;
    if (input.show !== undefined) t.show = { ...DEFAULT_SHOW, ...t.show, ...stripUndefined(input.show) };
    if (input.metadata) {
      const next = { ...t.metadata };
      for (const [k, v] of Object.entries(input.metadata)) {
        if (v === null || v === '') delete next[k];
        else next[k] = v;
      }
      t.metadata = next;
    }
    t.updatedAt = new Date();
    await tx.flush();
    return templateView(t);
  });
}

/**
 * Archives a template: invoices already rendered keep their PDF; new invoices no longer use it
 * (assignments to it are removed). The default can be archived only when it is the last template.
 */
export async function archiveTemplate(em: EntityManager, scope: Scope, id: string): Promise<InvoiceTemplateView> {
  return em.transactional(async (tx) => {
    await tx.execute(`select pg_advisory_xact_lock(hashtext(?))`, [`invoice-template-default:${scope.accountId}:${scope.livemode}`]);
    const t = await findTemplate(tx, id);
    if (t.status === 'archived') return templateView(t);
    if (t.isDefault && (await tx.count(InvoiceTemplate, { status: 'active', id: { $ne: id } })) > 0) {
      throw conflict('default_template', `Invoice template ${id} is the account's default.`, 'Make another template the default (PATCH is_default: true), then archive this one.', { current_state: 'active' });
    }
    t.status = 'archived';
    t.isDefault = false;
    t.updatedAt = new Date();
    await tx.flush();
    // The scope leads the table's key, so the delete reads this account's assignments, not every account's.
    await tx.execute(`delete from invoice_template_assignments where account_id = ? and livemode = ? and template_id = ?`, [scope.accountId, scope.livemode, id]);
    return templateView(t);
  });
}

/** Names the template of a customer's or a subscription's invoices (null: back to the default). */
export async function assignTemplate(em: EntityManager, scope: Scope, subjectId: string, templateId: string | null): Promise<void> {
  if (templateId === null) {
    await em.execute(`delete from invoice_template_assignments where account_id = ? and livemode = ? and subject_id = ?`, [scope.accountId, scope.livemode, subjectId]);
    return;
  }
  const t = await em.findOne(InvoiceTemplate, { id: templateId });
  if (!t || t.status !== 'active') throw validationFailed([{ path: 'template_id', message: `no active invoice template with id '${templateId}' exists in this account and mode` }]);
  await em.execute(
    `insert into invoice_template_assignments (account_id, livemode, subject_id, template_id, created_at) values (?, ?, ?, ?, now())
     on conflict (account_id, livemode, subject_id) do update set template_id = excluded.template_id`,
    [scope.accountId, scope.livemode, subjectId, templateId]);
}

export async function assignedTemplate(em: EntityManager, scope: Scope, subjectId: string): Promise<string | null> {
  const [row] = await em.execute<{ template_id: string }[]>(
    `select template_id from invoice_template_assignments where account_id = ? and livemode = ? and subject_id = ?`, [scope.accountId, scope.livemode, subjectId]);
  return row?.template_id ?? null;
}

function settingsOf(t: InvoiceTemplate): TemplateSettings {
  return {
    id: t.id, name: t.name, logo: t.logo ? Buffer.from(t.logo) : null, accentColor: t.accentColor, footer: t.footer ?? null, memo: t.memo ?? null, locale: t.locale,
    numberPrefix: t.numberPrefix, customFields: t.customFields, show: { ...DEFAULT_SHOW, ...t.show },
  };
}

/** The template an invoice renders with: its own, its subscription's, its customer's, the default, the built-in one. */
export async function resolveTemplate(
  em: EntityManager, scope: Scope, invoice: { templateId?: string | null; subscriptionId?: string | null; customerId: string },
): Promise<TemplateSettings> {
  const candidates = [
    invoice.templateId ?? null,
    invoice.subscriptionId ? await assignedTemplate(em, scope, invoice.subscriptionId) : null,
    await assignedTemplate(em, scope, invoice.customerId),
  ].filter((id): id is string => !!id);
  for (const id of candidates) {
    const t = await em.findOne(InvoiceTemplate, { id });
    if (t && (t.status === 'active' || id === invoice.templateId)) return settingsOf(t);
  }
  const fallback = await em.findOne(InvoiceTemplate, { isDefault: true });
  return fallback ? settingsOf(fallback) : BUILT_IN_TEMPLATE;
}
