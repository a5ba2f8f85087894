import { z } from 'zod';

/**
 * The ERP area's resources, declared once: each zod schema is what the routes answer with (and what
 * the OpenAPI document and the event catalog show); the TS types are inferred from it. Pure: zod
 * only (workflows import the types, with `import type`). Amounts the spec types `number` are decimal
 * major units; the `_minor` twins are exact integer minor units.
 */

export const ledgerAccountSchema = z.object({
  id: z.string(), object: z.literal('ledger_account'), livemode: z.boolean(), code: z.string(), name: z.string(),
  type: z.enum(['asset', 'liability', 'equity', 'revenue', 'expense']),
  system: z.boolean().describe('Part of the default chart; the postings of other areas use it.'),
  description: z.string().nullable(), created_at: z.iso.datetime(),
}).meta({ id: 'LedgerAccount' });

export const journalLineSchema = z.object({
  line: z.number().int(), account_code: z.string(), account_name: z.string(),
  debit: z.number().describe('Base currency, decimal major units.'), credit: z.number(),
  debit_minor: z.number().int(), credit_minor: z.number().int(),
  description: z.string().nullable(),
}).meta({ id: 'JournalLine' });

export const financialTransactionSchema = z.object({
  id: z.string(), object: z.literal('financial_transaction'), livemode: z.boolean(),
  type: z.enum(['revenue', 'expense', 'refund', 'transfer']),
  status: z.enum(['posted', 'reversed']),
  amount: z.number().describe('As sent: decimal major units of `currency`.'), amount_minor: z.number().int(),
  currency: z.string(), base_currency: z.string(), base_amount: z.number(), exchange_rate: z.string(),
  net_amount: z.number(), tax_amount: z.number(), tax_rate: z.string().describe('Percent, e.g. "19.0000".'),
  tax_inclusive: z.boolean(),
  account_code: z.string(), counter_account_code: z.string(),
  description: z.string().nullable(), customer_id: z.string().nullable(), project_id: z.string().nullable(),
  date: z.iso.date(),
  payment_terms: z.enum(['due_on_receipt', 'net_15', 'net_30', 'net_60', 'eom', '2_10_net_30']).nullable(),
  due_date: z.iso.date().nullable(),
  early_payment_discount: z.object({ date: z.iso.date(), percent: z.string(), amount: z.number() }).nullable(),
  journal_lines: z.array(journalLineSchema),
  reversal_of: z.string().nullable(), reversed_by: z.string().nullable(),
  source: z.object({ type: z.enum(['api', 'event', 'procurement', 'reversal']), id: z.string().nullable(), event_id: z.string().nullable() }),
  metadata: z.record(z.string(), z.string()), created_at: z.iso.datetime(),
}).meta({ id: 'FinancialTransaction' });

export const exchangeRateSchema = z.object({
  id: z.string(), object: z.literal('exchange_rate'), livemode: z.boolean(), currency: z.string(), base_currency: z.string(),
  rate: z.string().describe('Units of the base currency per one unit of `currency`.'), effective_date: z.iso.date(), created_at: z.iso.datetime(),
}).meta({ id: 'LedgerExchangeRate' });

export const trialBalanceSchema = z.object({
  object: z.literal('trial_balance'), livemode: z.boolean(), as_of: z.iso.date(), currency: z.string(),
  accounts: z.array(z.object({
    code: z.string(), name: z.string(), type: z.string(),
    debit: z.number(), credit: z.number(), debit_minor: z.number().int(), credit_minor: z.number().int(),
    balance: z.number().describe('Debits − credits.'),
  })),
  total_debit: z.number(), total_credit: z.number(), total_debit_minor: z.number().int(), total_credit_minor: z.number().int(),
  balanced: z.boolean(),
}).meta({ id: 'TrialBalance' });

export const erpSettingsSchema = z.object({
  object: z.literal('erp_settings'), livemode: z.boolean(), base_currency: z.string(), default_tax_rate: z.string(),
  approval_tiers: z.object({
    single_approval_from: z.number().describe('Orders from this base-currency total need one approver (procurement:write).'),
    dual_approval_from: z.number().describe('From this total, a second approver with finance:write as well.'),
  }),
  escalation_hours: z.number().int(), escalation_limit: z.number().int(), match_tolerance_percent: z.string(),
}).meta({ id: 'ErpSettings' });

const milestoneSchema = z.object({ name: z.string(), weight: z.number().int(), completed: z.boolean(), due_date: z.iso.date().nullable() });

export const projectSchema = z.object({
  id: z.string(), object: z.literal('project'), livemode: z.boolean(), name: z.string(), description: z.string().nullable(),
  customer_id: z.string().nullable(), budget: z.number(), budget_minor: z.number().int(), currency: z.string(),
  start_date: z.iso.date(), end_date: z.iso.date(),
  status: z.enum(['planned', 'in_progress', 'on_hold', 'completed', 'cancelled']),
  milestones: z.array(milestoneSchema), budget_exceeded_at: z.iso.datetime().nullable(),
  metadata: z.record(z.string(), z.string()), created_at: z.iso.datetime(), updated_at: z.iso.datetime(),
}).meta({ id: 'Project' });

export const projectAnalyticsSchema = z.object({
  object: z.literal('project_analytics'), project_id: z.string(),
  status: z.enum(['planned', 'in_progress', 'on_hold', 'completed', 'cancelled']),
  currency: z.string(), as_of: z.iso.date(),
  budget: z.number(), spent: z.number(), remaining: z.number(), revenue: z.number(),
  profitability: z.object({ margin_percent: z.number(), projected_profit: z.number() }),
  timeline: z.object({ start_date: z.iso.date(), end_date: z.iso.date(), completion_percent: z.number() }),
}).meta({ id: 'ProjectAnalytics' });

export const vendorSchema = z.object({
  id: z.string(), object: z.literal('vendor'), livemode: z.boolean(), name: z.string(), email: z.string().nullable(),
  currency: z.string(), payment_terms: z.string(), metadata: z.record(z.string(), z.string()), created_at: z.iso.datetime(),
}).meta({ id: 'Vendor' });

const approvalStepSchema = z.object({
  level: z.number().int(), role: z.enum(['procurement', 'finance']), permission: z.string(), assignee: z.string().nullable(),
  approved_by: z.string().nullable(), approved_at: z.string().nullable(), note: z.string().nullable(),
});

export const procurementOrderSchema = z.object({
  id: z.string(), object: z.literal('procurement_order'), livemode: z.boolean(), vendor_id: z.string(),
  status: z.enum(['draft', 'pending_approval', 'approved', 'rejected', 'ordered', 'partially_received', 'received', 'closed', 'cancelled']),
  currency: z.string(), total: z.number(), total_minor: z.number().int(), base_total_minor: z.number().int(),
  items: z.array(z.object({
    line: z.number().int(), sku: z.string().nullable(), description: z.string().nullable(), quantity: z.number().int(),
    unit_price: z.number(), unit_price_minor: z.number().int(), amount_minor: z.number().int(), received: z.number().int(),
  })),
  approval_required: z.boolean(),
  approval: z.object({
    steps: z.array(approvalStepSchema),
    rejection: z.object({ by: z.string(), at: z.string(), reason: z.string().nullable() }).nullable(),
    reminders: z.array(z.object({ level: z.number().int(), role: z.string(), assignee: z.string().nullable(), at: z.string(), escalation: z.number().int() })),
  }),
  escalation_count: z.number().int(), next_escalation_at: z.string().nullable(),
  warehouse_id: z.string().nullable(), project_id: z.string().nullable(), created_by: z.string(),
  vendor_reference: z.string().nullable(), cancellation_reason: z.string().nullable(),
  receipts: z.array(z.object({
    id: z.string(), received_at: z.string(), lines: z.array(z.object({ line: z.number().int(), quantity: z.number().int() })),
    value: z.number().int(), transaction_id: z.string().nullable(),
  })),
  bill: z.object({
    id: z.string(), invoice_number: z.string(), amount: z.number().int(), received_value: z.number().int(), variance: z.number().int(),
    transaction_id: z.string(), recorded_at: z.string(),
  }).nullable(),
  workflow_id: z.string(), test_clock_time: z.string().nullable(),
  metadata: z.record(z.string(), z.string()), created_at: z.iso.datetime(), updated_at: z.iso.datetime(),
}).meta({ id: 'ProcurementOrder' });

export type LedgerAccountView = z.output<typeof ledgerAccountSchema>;
export type FinancialTransactionView = z.output<typeof financialTransactionSchema>;
export type ExchangeRateView = z.output<typeof exchangeRateSchema>;
export type TrialBalanceView = z.output<typeof trialBalanceSchema>;
export type ErpSettingsView = z.output<typeof erpSettingsSchema>;
export type ProjectView = z.output<typeof projectSchema>;
export type ProjectAnalyticsView = z.output<typeof projectAnalyticsSchema>;
export type VendorView = z.output<typeof vendorSchema>;
