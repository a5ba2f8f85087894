import type { EntityManager } from '@mikro-orm/postgresql';
import { tool, type ToolSet } from 'ai';
import { z } from 'zod';
import { assertTimeZone, ordersByDay } from '../analytics/public.ts';
import { listInvoices, listSubscriptions } from '../billing/public.ts';
import { getStock, listOrders, lowStockLevels } from '../commerce/public.ts';
import { customerJourney, listInteractions } from '../crm/public.ts';
import { Customer, customerView, listCustomers } from '../customers/public.ts';
import { getPayment } from '../payments/public.ts';
import { allows, type Permission } from '../permissions.ts';
import type { Scope } from '../scope.ts';
import { notFound } from '../../platform/errors.ts';
import { ID_PREFIX } from '../../platform/ids.ts';
import { SUBSCRIPTION_STATUSES } from '../../workflows/billing/shared.ts';
import type { AiCitation } from './schemas.ts';

/**
 * The read-only tools a model may call to answer a question. Each wraps a domain service of
 * another area (through its public.ts) on the request's EntityManager, which is confined to the
 * key's account and mode, and needs the permission the REST route for the same data needs: a tool
 * whose permission the key lacks is not offered at all. There is no write tool and no tool that
 * takes SQL or a query language: the model only chooses among these reads and their typed inputs.
 * Results are compact projections (no addresses, card details or workflow ids), so less personal
 * data reaches the provider.
 */
export interface ToolContext {
  em: EntityManager;
  scope: Scope;
  now: Date;
}

interface ReadTool<I extends z.ZodType = z.ZodType> {
  permission: Permission;
  description: string;
  input: I;
  run(ctx: ToolContext, input: z.output<I>): Promise<unknown>;
}

const defineTool = <I extends z.ZodType>(t: ReadTool<I>): ReadTool => t as unknown as ReadTool;

const MAX_ROWS = 25;
const limit = z.int().min(1).max(MAX_ROWS).default(10).describe(`How many records (1-${MAX_ROWS}); newest first.`);
const id = (what: string) => z.string().min(1).max(64).describe(`The ${what} id.`);
const page = (n: number) => ({ where: {}, direction: 'desc' as const, limit: n });

const customerBrief = (c: ReturnType<typeof customerView>) => ({
  id: c.id, object: c.object, name: c.name, email: c.email, company: c.company, customer_type: c.customer_type,
  segments: c.segments, metadata: c.metadata, created_at: c.created_at,
});

export const READ_TOOLS: Record<string, ReadTool> = {
  search_customers: defineTool({
    permission: 'crm:read',
    description: 'Find customers by a text in their name, email or company, or by segment. Returns brief customer records.',
    input: z.object({
      query: z.string().max(200).optional().describe('Text to look for in name, email or company.'),
      segment: z.string().max(100).optional(),
      limit,
    }),
    async run({ em }, input) {
      const rows = await listCustomers(em, { ...(input.query ? { q: input.query } : {}), ...(input.segment ? { segment: [input.segment] } : {}) }, page(input.limit));
      return { customers: rows.slice(0, input.limit).map(customerBrief) };
    },
  }),
  get_customer: defineTool({
    permission: 'crm:read',
    description: 'One customer with their CRM journey: lifecycle stage, lifetime value, engagement score, purchase and interaction counts.',
    input: z.object({ customer_id: id('customer') }),
    async run({ em, now }, input) {
      const customer = await em.findOne(Customer, { id: input.customer_id });
      if (!customer) throw notFound('customer', input.customer_id);
      const journey = await customerJourney(em, customer.id, { touchpointLimit: 0, now });
      return {
        customer: customerBrief(customerView(customer)),
        journey: {
          lifecycle_stage: journey.lifecycle_stage, total_ltv: journey.total_ltv, currency: journey.currency,
          engagement_score: journey.engagement_score, summary: journey.summary,
        },
      };
    },
  }),
  list_interactions: defineTool({
    permission: 'crm:read',
    description: 'A customer\'s recent interactions (calls, emails, meetings, notes), newest first.',
    input: z.object({ customer_id: id('customer'), limit }),
    async run({ em }, input) {
      const rows = await listInteractions(em, input.customer_id, {}, page(input.limit));
      return {
        interactions: rows.slice(0, input.limit).map((i) => ({
          id: i.id, object: i.object, customer_id: i.customer_id, type: i.type, direction: i.direction,
          subject: i.subject, notes: i.notes, occurred_at: i.occurred_at,
        })),
      };
    },
  }),
  list_subscriptions: defineTool({
    permission: 'billing:read',
    description: 'Subscriptions, optionally of one customer or in some statuses (e.g. canceled, to study churn), newest first.',
    input: z.object({
      customer_id: id('customer').optional(),
      status: z.array(z.enum(SUBSCRIPTION_STATUSES)).max(SUBSCRIPTION_STATUSES.length).optional(),
      limit,
    }),
    async run({ em }, input) {
      const rows = await listSubscriptions(em, { customer_id: input.customer_id ? [input.customer_id] : undefined, status: input.status }, page(input.limit));
      return {
        subscriptions: rows.slice(0, input.limit).map((s) => ({
          id: s.id, object: s.object, customer_id: s.customer_id, plan_id: s.plan_id, status: s.status, billing_cycle: s.billing_cycle,
          cancel_at_period_end: s.cancel_at_period_end, canceled_at: s.canceled_at, current_period_end: s.current_period_end, created_at: s.created_at,
        })),
      };
    },
  }),
  list_invoices: defineTool({
    permission: 'billing:read',
    description: 'Invoices, optionally of one customer or in some statuses (draft, open, paid, uncollectible, void), newest first.',
    input: z.object({
      customer_id: id('customer').optional(),
      status: z.array(z.enum(['draft', 'open', 'paid', 'uncollectible', 'void'])).max(5).optional(),
      limit,
    }),
    async run({ em }, input) {
      const rows = await listInvoices(em, { customer_id: input.customer_id ? [input.customer_id] : undefined, status: input.status }, page(input.limit));
      return {
        invoices: rows.slice(0, input.limit).map((i) => ({
          id: i.id, object: i.object, customer_id: i.customer_id, subscription_id: i.subscription_id, number: i.number, status: i.status,
          currency: i.currency, amount: i.amount, amount_due: i.amount_due, due_date: i.due_date, paid_at: i.paid_at, created_at: i.created_at,
        })),
      };
    },
  }),
  get_payment: defineTool({
    permission: 'payments:read',
    description: 'One payment: status, amount (minor units), currency, customer and refunds.',
    input: z.object({ payment_id: id('payment') }),
    async run({ em }, input) {
      const p = await getPayment(em, input.payment_id);
      return {
        payment: {
          id: p.id, object: p.object, status: p.status, amount: p.amount, amount_refunded: p.amount_refunded, currency: p.currency,
          customer_id: p.customer_id, description: p.description, created_at: p.created_at,
        },
      };
    },
  }),
  list_orders: defineTool({
    permission: 'commerce:read',
    description: 'Orders, optionally of one customer, in a status group (open, fulfilled, closed) or created after a date; newest first. Amounts in minor units.',
    input: z.object({
      customer_id: id('customer').optional(),
      status_group: z.enum(['open', 'fulfilled', 'closed']).optional(),
      created_after: z.iso.date().optional().describe('YYYY-MM-DD'),
      limit,
    }),
    async run({ em }, input) {
      const rows = await listOrders(em, {
        ...(input.customer_id ? { customer_id: [input.customer_id] } : {}),
        ...(input.status_group ? { status_group: [input.status_group] } : {}),
        ...(input.created_after ? { created_gte: new Date(`${input.created_after}T00:00:00Z`) } : {}),
      }, page(input.limit));
      return {
        orders: rows.slice(0, input.limit).map((o) => ({
          id: o.id, object: o.object, customer_id: o.customer_id, store_id: o.store_id, status: o.status, payment_status: o.payment_status,
          total_amount: o.total_amount, currency: o.currency, fulfillment_status: o.fulfillment.status,
          line_items: o.line_items.map((l) => ({ sku: l.sku, quantity: l.quantity })), created_at: o.created_at,
        })),
      };
    },
  }),
  get_stock: defineTool({
    permission: 'commerce:read',
    description: 'Stock of one SKU in every warehouse: on hand, reserved, available, reorder point and safety stock.',
    input: z.object({ sku: z.string().min(1).max(100) }),
    async run({ em, scope }, input) {
      const levels = await getStock(em, scope, input.sku);
      return {
        sku: input.sku,
        total_available: levels.reduce((n, l) => n + l.available, 0),
        levels: levels.map((l) => ({
          warehouse_id: l.warehouse_id, quantity: l.quantity, reserved: l.reserved, available: l.available,
          reorder_point: l.reorder_point, safety_stock: l.safety_stock, below_reorder_point: l.available <= l.reorder_point,
        })),
      };
    },
  }),
  list_low_stock: defineTool({
    permission: 'commerce:read',
    description: 'Stock levels at or below their reorder point or safety stock, fewest available first: the SKUs about to run out. Pair with list_orders (open orders) or sales_by_day for demand.',
    input: z.object({ limit }),
    async run({ em, scope }, input) {
      const levels = await lowStockLevels(em, scope, input.limit);
      return {
        levels: levels.map((l) => ({
          sku: l.sku, warehouse_id: l.warehouse_id, quantity: l.quantity, reserved: l.reserved, available: l.available,
          reorder_point: l.reorder_point, safety_stock: l.safety_stock,
        })),
      };
    },
  }),
  sales_by_day: defineTool({
    permission: 'analytics:read',
    description: 'Orders, units, cancellations and gross sales (minor units) per local day and currency, for a window of at most 92 days.',
    input: z.object({
      start: z.iso.date().describe('YYYY-MM-DD'),
      end: z.iso.date().describe('YYYY-MM-DD'),
      timezone: z.string().max(64).default('UTC'),
    }),
    async run({ em, scope }, input) {
      const days = (Date.parse(input.end) - Date.parse(input.start)) / 86_400_000;
      if (!(days >= 0 && days <= 92)) throw new Error('the window must have end on or after start, at most 92 days apart');
      await assertTimeZone(em, input.timezone);
      return { days: await ordersByDay(em, scope, { start: input.start, end: input.end, timezone: input.timezone }) };
    },
  }),
};

/** The names of the tools a key holding `permissions` is offered (the others are not offered at all). */
export function toolNamesFor(permissions: readonly string[]): string[] {
  return Object.entries(READ_TOOLS).filter(([, t]) => allows(permissions, t.permission)).map(([name]) => name);
}

/** Collects, per call, which tools ran and every record id their results contained. */
export class ToolLedger {
  readonly used: string[] = [];
  private readonly cited = new Map<string, AiCitation>();

  note(toolName: string, result: unknown): void {
    if (!this.used.includes(toolName)) this.used.push(toolName);
    for (const recordId of idsIn(result)) {
      if (!this.cited.has(recordId)) this.cited.set(recordId, { id: recordId, object: objectOf(recordId), tool: toolName, mentioned: false });
    }
  }

  citations(text: string): AiCitation[] {
    return [...this.cited.values()].map((c) => ({ ...c, mentioned: text.includes(c.id) }));
  }
}

/** The AI SDK tools for a key: the permitted read tools, each noting its result in the ledger. */
export function toolSetFor(ctx: ToolContext, permissions: readonly string[], ledger: ToolLedger): ToolSet {
  const set: ToolSet = {};
  for (const name of toolNamesFor(permissions)) {
    const t = READ_TOOLS[name]!;
    set[name] = tool({
      description: t.description,
      inputSchema: t.input,
      execute: async (input: unknown) => {
        // Each tool call reads through a fork: concurrent calls of one step share no identity map.
        const result = await t.run({ ...ctx, em: ctx.em.fork() }, input);
        ledger.note(name, result);
        return result;
      },
    });
  }
  return set;
}

const PREFIX_OBJECT = new Map<string, string>(Object.entries(ID_PREFIX).map(([kind, prefix]) => [prefix, snake(kind)]));
const RECORD_ID = /^([a-z]+)_[0-7][0-9a-hjkmnp-tv-z]{25}$/;

function snake(kind: string): string {
  return kind.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

function objectOf(recordId: string): string {
  const prefix = RECORD_ID.exec(recordId)?.[1];
  return (prefix && PREFIX_OBJECT.get(prefix)) ?? 'record';
}

/** Every record id (a TypeID of a known prefix) in a tool result, in the order met. */
export function idsIn(value: unknown, out: string[] = []): string[] {
  if (typeof value === 'string') {
    const m = RECORD_ID.exec(value);
    if (m && PREFIX_OBJECT.has(m[1]!)) out.push(value);
  } else if (Array.isArray(value)) {
    for (const v of value) idsIn(v, out);
  } else if (value && typeof value === 'object') {
    for (const v of Object.values(value)) idsIn(v, out);
  }
  return out;
}

