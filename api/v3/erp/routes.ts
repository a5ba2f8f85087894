import { z } from 'zod';
import { PAYMENT_TERMS, amountToMinor, decimalsOf } from '../../../domain/erp/accounting.ts';
import { LEDGER_ACCOUNT_TYPES, PROJECT_STATUSES, TRANSACTION_TYPES } from '../../../domain/erp/entities.ts';
import {
  createLedgerAccount, ensureLedger, getTransaction, listExchangeRates, listLedgerAccounts, listTransactions, postTransaction,
  reverseTransaction, setExchangeRate, settingsView, trialBalance, updateSettings,
} from '../../../domain/erp/ledger.ts';
import {
  actorOf, advanceOrderClock, approveOrder, billOrder, cancelOrder, createProcurementOrder, editOrderItems, getProcurementOrder,
  listProcurementOrders, receiveOrder, rejectOrder, submitOrder, type ProcurementContext,
} from '../../../domain/erp/procurement.ts';
import { createProject, getProject, getProjectAnalytics, listProjects, readProject, updateProject } from '../../../domain/erp/projects.ts';
import {
  erpSettingsSchema, exchangeRateSchema, financialTransactionSchema, ledgerAccountSchema, procurementOrderSchema,
  projectAnalyticsSchema, projectSchema, trialBalanceSchema, vendorSchema,
} from '../../../domain/erp/schemas.ts';
import { createVendor, listVendors, readVendor } from '../../../domain/erp/vendors.ts';
import { exponent, toMinorUnits } from '../../../domain/money.ts';
import { validationFailed } from '../../../platform/errors.ts';
import { PROCUREMENT_STATUSES } from '../../../workflows/erp/shared.ts';
import type { AppDeps } from '../../http/deps.ts';
import { listOf, listQuery, listRoute } from '../../http/pagination.ts';
import { getRoute, route } from '../../http/route.ts';
import { csv, currency, isoDate, metadata } from '../../http/schemas.ts';

const TAG = 'ERP';
const id = z.string().min(1).max(64);
const today = () => new Date().toISOString().slice(0, 10);
/** A decimal major-unit amount, as the spec types it (`number`); its decimals are checked against the currency. */
const MAX_AMOUNT = 1e13;
const amount = z.number().positive('must be above 0').max(MAX_AMOUNT, `must be at most ${MAX_AMOUNT}`);
const percent = (max: number) => z.number().min(0).max(max)
  .refine((v) => decimalsOf(v) <= 4, 'at most 4 decimals').transform((v) => v.toFixed(4)).describe('Percent, e.g. 19 or 7.5.');
const code = z.string().regex(/^[0-9A-Za-z][0-9A-Za-z._-]{0,19}$/, 'letters, digits, . _ - (up to 20 characters), e.g. 6200');

function procurement(deps: AppDeps, em: ProcurementContext['em']): ProcurementContext {
  return { em, temporal: deps.temporal };
}

/** A request's Idempotency-Key as the order's workflow remembers it: per API key, so two keys' equal strings never meet. */
function actionKey(ctx: { auth: { keyId: string }; idempotencyKey: string | null }): string | null {
  return ctx.idempotencyKey === null ? null : `${ctx.auth.keyId}:${ctx.idempotencyKey}`;
}

/** The amount's decimals checked against its currency (422 naming the field, with the currency's exponent). */
function minorOf(value: number, cur: string, path: string): number {
  const minor = amountToMinor(value, cur);
  if (minor === null) {
    const exp = exponent(cur);
    throw validationFailed([{ path, message: `${cur} amounts have ${exp === 0 ? 'no decimals' : `at most ${exp} decimals`}; ${value} has ${decimalsOf(value)} (send e.g. ${toMinorUnits(value, cur) / 10 ** exp})` }]);
  }
  return minor;
}

// ---- Ledger -------------------------------------------------------------------------------------

const settingsBody = z.strictObject({
  base_currency: currency.optional().describe('Can change only while the ledger holds no transactions.'),
  default_tax_rate: percent(99).optional().describe('Applied to revenue, expense and refund transactions that send no tax_rate.'),
  approval_tiers: z.strictObject({
    single_approval_from: amount.or(z.literal(0)).optional(),
    dual_approval_from: amount.or(z.literal(0)).optional(),
  }).optional().describe('Base-currency totals (decimal major units) from which a purchase order needs one, then two approvals.'),
  escalation_hours: z.number().int().min(1).max(8760).optional(),
  escalation_limit: z.number().int().min(0).max(100).optional().describe('Escalations before a pending order expires.'),
  match_tolerance_percent: percent(50).optional().describe('How far a vendor bill may differ from the received value.'),
});

const transactionBody = z.strictObject({
  type: z.enum(TRANSACTION_TYPES).describe('revenue: Dr receivable, Cr revenue (+ tax payable); expense: Dr expense (+ input tax), Cr payable; refund: Dr returns (+ tax payable), Cr cash; transfer: Dr account_code, Cr counter_account_code.'),
  amount: amount.describe('Decimal major units of `currency` (at most its decimals), e.g. 100.00.'),
  currency,
  account_code: code.optional().describe('The revenue, expense or transfer account (defaults: revenue 4000, expense 6000, refund 4100; a transfer needs it).'),
  counter_account_code: code.optional().describe('The other side (defaults: revenue 1200 receivable, expense 2000 payable, refund and transfer 1000 cash).'),
  description: z.string().max(1000).optional(),
  customer_id: id.optional(),
  project_id: id.optional(),
  tax_inclusive: z.boolean().default(false).describe('true: `amount` includes the tax, which is extracted (half-even; the remainder stays on the revenue line).'),
  tax_rate: percent(99).optional().describe('Percent; default the ledger\'s default_tax_rate (0 unless set).'),
  payment_terms: z.enum(PAYMENT_TERMS).optional().describe('Revenue and expense only: sets due_date (and the early-payment discount of 2_10_net_30).'),
  date: isoDate.optional().describe('The transaction date (default today, UTC).'),
  metadata: metadata.optional(),
});

const transactionId = z.strictObject({ transaction_id: id });

const transactionQuery = z.strictObject({
  ...listQuery,
  date_gte: isoDate.optional(), date_lte: isoDate.optional(),
  account_code: code.optional().describe('Transactions with a journal line on this account.'),
  customer_id: id.optional(), project_id: id.optional(),
  type: csv(z.enum(TRANSACTION_TYPES)).optional(),
});

const ledgerRoutes = [
  getRoute({
    path: '/v3/erp/settings', operationId: 'getErpSettings', tag: TAG, summary: 'The ledger\'s base currency, default tax rate and purchase approval rules',
    permission: 'erp:read', response: erpSettingsSchema,
    get: async ({ em, auth }) => settingsView(auth, await ensureLedger(em(), auth)),
  }),
  route({
    method: 'patch', path: '/v3/erp/settings', operationId: 'updateErpSettings', tag: TAG, summary: 'Change the ledger settings and approval rules',
    permission: 'erp:write', status: 200, body: settingsBody, response: erpSettingsSchema,
    async handler({ em, auth, body }) {
      const base = body.base_currency ?? (await ensureLedger(em(), auth)).baseCurrency;
      const tier = (v: number | undefined, path: string) => (v === undefined ? undefined : minorOf(v, base, `approval_tiers.${path}`));
      return {
        body: await updateSettings(em(), auth, {
          baseCurrency: body.base_currency, defaultTaxRate: body.default_tax_rate,
          singleApprovalFrom: tier(body.approval_tiers?.single_approval_from, 'single_approval_from'),
          dualApprovalFrom: tier(body.approval_tiers?.dual_approval_from, 'dual_approval_from'),
          escalationHours: body.escalation_hours, escalationLimit: body.escalation_limit, matchTolerancePercent: body.match_tolerance_percent,
        }),
      };
    },
  }),
  route({
    method: 'get', path: '/v3/financial/accounts', operationId: 'listLedgerAccounts', tag: TAG,
    summary: 'The chart of accounts (seeded with a default chart on first use), by code', permission: 'erp:read', status: 200,
    response: listOf(ledgerAccountSchema),
    async handler({ em, auth, req }) {
      const data = await listLedgerAccounts(em(), auth);
      return { body: { object: 'list', data, has_more: false, next_cursor: null, url: req.path } };
    },
  }),
  route({
    method: 'post', path: '/v3/financial/accounts', operationId: 'createLedgerAccount', tag: TAG, summary: 'Add an account to the chart of accounts',
    permission: 'erp:write', status: 201,
    body: z.strictObject({ code, name: z.string().trim().min(1).max(200), type: z.enum(LEDGER_ACCOUNT_TYPES), description: z.string().max(1000).optional() }),
    response: ledgerAccountSchema,
    async handler({ em, auth, body }) {
      return { body: await createLedgerAccount(em(), auth, { code: body.code, name: body.name, type: body.type, description: body.description ?? null }) };
    },
  }),
  route({
    method: 'post', path: '/v3/financial/exchange_rates', operationId: 'setExchangeRate', tag: TAG,
    summary: 'Store an exchange rate to the base currency (from its effective date; the same date replaces it)', permission: 'erp:write', status: 201,
    body: z.strictObject({
      currency,
      rate: z.union([z.number().positive(), z.string()]).transform((v) => (typeof v === 'number' ? String(v) : v.trim()))
        .refine((v) => /^\d{1,12}(\.\d{1,12})?$/.test(v) && Number(v) > 0, 'expected a positive decimal with up to 12 decimals (units of the base currency per one unit of currency)'),
      effective_date: isoDate.optional().describe('Default today (UTC).'),
    }),
    response: exchangeRateSchema,
    async handler({ em, auth, body }) {
      return { body: await setExchangeRate(em(), auth, { currency: body.currency, rate: body.rate, effectiveDate: body.effective_date ?? today() }) };
    },
  }),
  route({
    method: 'get', path: '/v3/financial/exchange_rates', operationId: 'listExchangeRates', tag: TAG, summary: 'Stored exchange rates, newest first per currency',
    permission: 'erp:read', status: 200, query: z.strictObject({ currency: currency.optional() }), response: listOf(exchangeRateSchema),
    async handler({ em, auth, query, req }) {
      const data = await listExchangeRates(em(), auth, query.currency);
      return { body: { object: 'list', data, has_more: false, next_cursor: null, url: req.path } };
    },
  }),
  route({
    method: 'post', path: '/v3/financial/transactions', operationId: 'createFinancialTransaction', tag: TAG,
    summary: 'Post a transaction as a balanced journal entry (tax split, payment terms, base currency)', permission: 'erp:write', status: 201,
    body: transactionBody, response: financialTransactionSchema,
    async handler(ctx) {
      const { em, auth, body } = ctx;
      const view = await postTransaction(em(), auth, {
        id: await ctx.resourceId('financialTransaction'), type: body.type, amount: minorOf(body.amount, body.currency, 'amount'), currency: body.currency,
        accountCode: body.account_code ?? null, counterAccountCode: body.counter_account_code ?? null, description: body.description ?? null,
        customerId: body.customer_id ?? null, projectId: body.project_id ?? null, taxInclusive: body.tax_inclusive, taxRate: body.tax_rate ?? null,
        paymentTerms: body.payment_terms ?? null, date: body.date ?? today(), metadata: body.metadata ?? {},
      }, ctx.requestId);
      return { body: view, headers: { Location: `/v3/financial/transactions/${view.id}` } };
    },
  }),
  listRoute({
    path: '/v3/financial/transactions', operationId: 'listFinancialTransactions', tag: TAG,
    summary: 'Financial transactions, newest first; filters: date range, account, customer, project, type', permission: 'erp:read',
    item: financialTransactionSchema, query: transactionQuery,
    list: ({ em, auth, query }, page) => listTransactions(em(), auth, {
      dateGte: query.date_gte, dateLte: query.date_lte, accountCode: query.account_code, customerId: query.customer_id,
      projectId: query.project_id, type: query.type,
    }, page),
  }),
  getRoute({
    path: '/v3/financial/transactions/{transaction_id}', operationId: 'getFinancialTransaction', tag: TAG,
    summary: 'A transaction with its journal lines', permission: 'erp:read', readOnly: true, params: transactionId, response: financialTransactionSchema,
    get: ({ em, auth, params }) => getTransaction(em(), auth, params.transaction_id),
  }),
  route({
    method: 'post', path: '/v3/financial/transactions/{transaction_id}/reverse', operationId: 'reverseFinancialTransaction', tag: TAG,
    summary: 'Post the mirror entry of a transaction (entries are never edited or deleted)', permission: 'erp:write', status: 201,
    params: transactionId,
    body: z.strictObject({ date: isoDate.optional().describe('Default today (UTC); not before the original.'), description: z.string().max(1000).optional() }),
    response: financialTransactionSchema,
    async handler(ctx) {
      const view = await reverseTransaction(ctx.em(), ctx.auth, ctx.params.transaction_id, {
        reversalId: await ctx.resourceId('financialTransaction'), date: ctx.body.date ?? null, description: ctx.body.description ?? null,
      }, ctx.requestId);
      return { body: view, headers: { Location: `/v3/financial/transactions/${view.id}` } };
    },
  }),
  getRoute({
    path: '/v3/financial/reports/trial-balance', operationId: 'getTrialBalance', tag: TAG,
    summary: 'Debits and credits per account up to a date (they always balance)', permission: 'erp:read',
    query: z.strictObject({ as_of: isoDate.optional().describe('Default today (UTC).') }), response: trialBalanceSchema,
    get: ({ em, auth, query }) => trialBalance(em(), auth, query.as_of ?? today()),
  }),
];

// ---- Projects -----------------------------------------------------------------------------------

const milestones = z.array(z.strictObject({
  name: z.string().trim().min(1).max(200),
  weight: z.number().int().min(1).max(1000).default(1).describe('Relative weight in completion_percent.'),
  completed: z.boolean().default(false),
  due_date: isoDate.nullable().optional(),
})).max(100);

const projectBody = z.strictObject({
  name: z.string().trim().min(1).max(200),
  description: z.string().max(2000).optional(),
  customer_id: id.optional(),
  budget: z.number().nonnegative().max(MAX_AMOUNT).describe('Decimal major units of the project currency.'),
  currency: currency.optional().describe('The ledger\'s base currency (the default).'),
  start_date: isoDate,
  end_date: isoDate,
  status: z.enum(PROJECT_STATUSES).default('planned'),
  milestones: milestones.optional(),
  metadata: metadata.optional(),
});

const projectPatch = z.strictObject({
  name: z.string().trim().min(1).max(200).optional(),
  description: z.string().max(2000).nullable().optional(),
  budget: z.number().nonnegative().max(MAX_AMOUNT).optional(),
  start_date: isoDate.optional(),
  end_date: isoDate.optional(),
  status: z.enum(PROJECT_STATUSES).optional(),
  milestones: milestones.optional().describe('Replaces the list.'),
  metadata: metadata.optional(),
});

const projectId = z.strictObject({ project_id: id });
const milestoneList = (m: z.output<typeof milestones> | undefined) => (m ?? []).map((x) => ({ ...x, due_date: x.due_date ?? null }));

const projectRoutes = [
  route({
    method: 'post', path: '/v3/projects', operationId: 'createProject', tag: TAG, summary: 'Create a project', permission: 'erp:write', status: 201,
    body: projectBody, response: projectSchema,
    async handler(ctx) {
      const { body, em, auth } = ctx;
      const cur = body.currency ?? (await ensureLedger(em(), auth)).baseCurrency;
      const view = await createProject(em(), auth, {
        id: await ctx.resourceId('project'), name: body.name, description: body.description ?? null, customerId: body.customer_id ?? null,
        budget: minorOf(body.budget, cur, 'budget'), currency: body.currency ?? null, startDate: body.start_date, endDate: body.end_date,
        status: body.status, milestones: milestoneList(body.milestones), metadata: body.metadata ?? {},
      });
      return { body: view, headers: { Location: `/v3/projects/${view.id}` } };
    },
  }),
  listRoute({
    path: '/v3/projects', operationId: 'listProjects', tag: TAG, summary: 'Projects, newest first', permission: 'erp:read', item: projectSchema,
    query: z.strictObject({ ...listQuery, status: csv(z.enum(PROJECT_STATUSES)).optional(), customer_id: id.optional() }),
    list: ({ em, query }, page) => listProjects(em(), { status: query.status, customerId: query.customer_id }, page),
  }),
  getRoute({
    path: '/v3/projects/{project_id}', operationId: 'getProject', tag: TAG, summary: 'Retrieve a project', permission: 'erp:read', readOnly: true,
    params: projectId, response: projectSchema, get: ({ deps, auth, params }) => readProject(deps.orm, auth, params.project_id),
  }),
  route({
    method: 'patch', path: '/v3/projects/{project_id}', operationId: 'updateProject', tag: TAG,
    summary: 'Update a project (status moves planned → in_progress ⇄ on_hold → completed, or cancelled)', permission: 'erp:write', status: 200,
    params: projectId, body: projectPatch, response: projectSchema,
    async handler({ em, auth, params, body, requestId }) {
      const current = await getProject(em(), params.project_id);
      return {
        body: await updateProject(em(), auth, params.project_id, {
          name: body.name, description: body.description, budget: body.budget === undefined ? undefined : minorOf(body.budget, current.currency, 'budget'),
          startDate: body.start_date, endDate: body.end_date, status: body.status,
          milestones: body.milestones ? milestoneList(body.milestones) : undefined, metadata: body.metadata,
        }, requestId),
      };
    },
  }),
  getRoute({
    path: '/v3/projects/{project_id}/analytics', operationId: 'getProjectAnalytics', tag: TAG,
    summary: 'Budget, spending, profitability and timeline of a project (docs/erp.md has the formulas)', permission: 'erp:read',
    params: projectId, query: z.strictObject({ as_of: isoDate.optional().describe('Default today (UTC).') }), response: projectAnalyticsSchema,
    get: ({ em, auth, params, query }) => getProjectAnalytics(em(), auth, params.project_id, query.as_of ?? today()),
  }),
];

// ---- Vendors and procurement ------------------------------------------------------------------

const vendorId = z.strictObject({ vendor_id: id });

const vendorRoutes = [
  route({
    method: 'post', path: '/v3/vendors', operationId: 'createVendor', tag: TAG, summary: 'Create a vendor', permission: 'erp:write', status: 201,
    body: z.strictObject({
      name: z.string().trim().min(1).max(200),
      email: z.email().max(254).optional().describe('Where purchase orders go. Sandbox: a +unavailable, +reject or +down tag picks a test scenario.'),
      currency: currency.optional().describe('Default the ledger\'s base currency.'),
      payment_terms: z.enum(PAYMENT_TERMS).default('net_30'),
      metadata: metadata.optional(),
    }),
    response: vendorSchema,
    async handler(ctx) {
      const { em, auth, body } = ctx;
      const view = await createVendor(em(), auth, {
        id: await ctx.resourceId('vendor'), name: body.name, email: body.email ?? null,
        currency: body.currency ?? (await ensureLedger(em(), auth)).baseCurrency, paymentTerms: body.payment_terms, metadata: body.metadata ?? {},
      });
      return { body: view, headers: { Location: `/v3/vendors/${view.id}` } };
    },
  }),
  listRoute({
    path: '/v3/vendors', operationId: 'listVendors', tag: TAG, summary: 'Vendors, newest first', permission: 'erp:read', item: vendorSchema,
    list: ({ em }, page) => listVendors(em(), page),
  }),
  getRoute({
    path: '/v3/vendors/{vendor_id}', operationId: 'getVendor', tag: TAG, summary: 'Retrieve a vendor', permission: 'erp:read', readOnly: true,
    params: vendorId, response: vendorSchema, get: ({ deps, auth, params }) => readVendor(deps.orm, auth, params.vendor_id),
  }),
];

const item = z.strictObject({
  sku: z.string().trim().min(1).max(100).optional().describe('Stocked goods: received into the order\'s warehouse.'),
  description: z.string().trim().min(1).max(500).optional(),
  quantity: z.number().int().min(1).max(1_000_000),
  unit_price: amount.describe('Decimal major units.'),
  currency,
});

const orderBody = z.strictObject({
  vendor_id: id,
  items: z.array(item).min(1).max(200),
  approval_required: z.boolean().default(false).describe('true: at least one approval whatever the amount.'),
  submit: z.boolean().default(true).describe('false: the order stays a draft (its items editable, no approvals yet) until POST …/submit.'),
  warehouse_id: id.optional().describe('Where receipts of SKU items go (required when an item has a sku).'),
  project_id: id.optional().describe('Book the receipts and the bill against this project.'),
  test_clock_time: z.iso.datetime({ offset: true }).transform((t) => new Date(t)).optional()
    .describe('Sandbox only: the order\'s timers run on a frozen clock that starts here and moves with POST …/test_clock/advance.'),
  metadata: metadata.optional(),
});

const orderId = z.strictObject({ procurement_order_id: id });

const procurementRoutes = [
  route({
    method: 'post', path: '/v3/procurement/orders', operationId: 'createProcurementOrder', tag: TAG,
    summary: 'Create a purchase order; its workflow (procurement-order-<id>) runs approvals, the vendor, receipts and the bill',
    permission: 'erp:write', status: 201, temporal: true, body: orderBody, response: procurementOrderSchema,
    async handler(ctx) {
      const { body } = ctx;
      const view = await createProcurementOrder(procurement(ctx.deps, ctx.em()), ctx.auth, {
        orderId: await ctx.resourceId('procurementOrder'), vendorId: body.vendor_id, items: body.items, approvalRequired: body.approval_required, submit: body.submit,
        warehouseId: body.warehouse_id ?? null, projectId: body.project_id ?? null, testClockTime: body.test_clock_time ?? null,
        metadata: body.metadata ?? {}, requestId: ctx.requestId,
      });
      return { body: view, headers: { Location: `/v3/procurement/orders/${view.id}` } };
    },
  }),
  listRoute({
    path: '/v3/procurement/orders', operationId: 'listProcurementOrders', tag: TAG, summary: 'Purchase orders, newest first',
    permission: 'erp:read', item: procurementOrderSchema,
    query: z.strictObject({ ...listQuery, status: csv(z.enum(PROCUREMENT_STATUSES)).optional(), vendor_id: id.optional() }),
    list: ({ em, query }, page) => listProcurementOrders(em(), { status: query.status, vendorId: query.vendor_id }, page),
  }),
  getRoute({
    path: '/v3/procurement/orders/{procurement_order_id}', operationId: 'getProcurementOrder', tag: TAG, summary: 'Retrieve a purchase order',
    permission: 'erp:read', readOnly: true, params: orderId, response: procurementOrderSchema, get: ({ em, params }) => getProcurementOrder(em(), params.procurement_order_id),
  }),
  route({
    method: 'patch', path: '/v3/procurement/orders/{procurement_order_id}', operationId: 'editProcurementOrder', tag: TAG,
    summary: 'Replace the items of an order awaiting approval (every approval starts again)', permission: 'erp:write', status: 200, temporal: true,
    params: orderId, body: z.strictObject({ items: z.array(item).min(1).max(200) }), response: procurementOrderSchema,
    async handler(ctx) {
      return { body: await editOrderItems(procurement(ctx.deps, ctx.em()), ctx.auth, ctx.params.procurement_order_id, ctx.body.items, ctx.requestId) };
    },
  }),
  route({
    method: 'post', path: '/v3/procurement/orders/{procurement_order_id}/approve', operationId: 'approveProcurementOrder', tag: TAG,
    summary: 'Approve the pending level (procurement:write, then finance:write; never the creator, never twice)', permission: 'erp:read', status: 200,
    temporal: true, params: orderId, body: z.strictObject({ note: z.string().max(1000).optional() }), response: procurementOrderSchema,
    async handler(ctx) {
      return { body: await approveOrder(procurement(ctx.deps, ctx.em()), ctx.params.procurement_order_id, actorOf(ctx.auth), ctx.body.note ?? null, ctx.requestId, actionKey(ctx)) };
    },
  }),
  route({
    method: 'post', path: '/v3/procurement/orders/{procurement_order_id}/reject', operationId: 'rejectProcurementOrder', tag: TAG,
    summary: 'Reject an order awaiting approval (the pending level\'s permission)', permission: 'erp:read', status: 200, temporal: true,
    params: orderId, body: z.strictObject({ reason: z.string().max(1000).optional() }), response: procurementOrderSchema,
    async handler(ctx) {
      return { body: await rejectOrder(procurement(ctx.deps, ctx.em()), ctx.params.procurement_order_id, actorOf(ctx.auth), ctx.body.reason ?? null, ctx.requestId, actionKey(ctx)) };
    },
  }),
  route({
    method: 'post', path: '/v3/procurement/orders/{procurement_order_id}/receive', operationId: 'receiveProcurementOrder', tag: TAG,
    summary: 'Record a goods receipt: stock into the warehouse, Dr inventory / Cr goods received not invoiced', permission: 'erp:write', status: 200,
    temporal: true, params: orderId,
    body: z.strictObject({
      lines: z.array(z.strictObject({ line: z.number().int().min(1).max(200), quantity: z.number().int().min(0).max(1_000_000) })).min(1).max(200).optional()
        .describe('Omitted: everything still outstanding.'),
    }),
    response: procurementOrderSchema,
    async handler(ctx) {
      const receiptId = await ctx.resourceId('procurementReceipt');
      return { body: await receiveOrder(procurement(ctx.deps, ctx.em()), ctx.params.procurement_order_id, receiptId, ctx.body.lines ?? null, ctx.requestId) };
    },
  }),
  route({
    method: 'post', path: '/v3/procurement/orders/{procurement_order_id}/bill', operationId: 'billProcurementOrder', tag: TAG,
    summary: 'Record the vendor bill: three-way match with order and receipts, then Dr GRNI / Cr payable; the order closes', permission: 'erp:write',
    status: 200, temporal: true, params: orderId,
    body: z.strictObject({ invoice_number: z.string().trim().min(1).max(100), amount: amount.describe('Decimal major units of the order currency.') }),
    response: procurementOrderSchema,
    async handler(ctx) {
      const billId = await ctx.resourceId('vendorBill');
      return {
        body: await billOrder(procurement(ctx.deps, ctx.em()), ctx.params.procurement_order_id, { billId, invoiceNumber: ctx.body.invoice_number, amount: ctx.body.amount }, ctx.requestId),
      };
    },
  }),
  route({
    method: 'post', path: '/v3/procurement/orders/{procurement_order_id}/submit', operationId: 'submitProcurementOrder', tag: TAG,
    summary: 'Submit a draft order: to approval by its amount tier, or straight to approved', permission: 'erp:write', status: 200, temporal: true,
    params: orderId, body: z.strictObject({}), response: procurementOrderSchema,
    async handler(ctx) {
      return { body: await submitOrder(procurement(ctx.deps, ctx.em()), ctx.params.procurement_order_id, ctx.requestId) };
    },
  }),
  route({
    method: 'post', path: '/v3/procurement/orders/{procurement_order_id}/cancel', operationId: 'cancelProcurementOrder', tag: TAG,
    summary: 'Cancel an order before any receipt', permission: 'erp:write', status: 200, temporal: true, params: orderId,
    body: z.strictObject({ reason: z.string().trim().min(1).max(500).optional() }), response: procurementOrderSchema,
    async handler(ctx) {
      return { body: await cancelOrder(procurement(ctx.deps, ctx.em()), ctx.params.procurement_order_id, ctx.body.reason ?? 'requested', ctx.requestId, actionKey(ctx)) };
    },
  }),
  route({
    method: 'post', path: '/v3/procurement/orders/{procurement_order_id}/test_clock/advance', operationId: 'advanceProcurementOrderClock', tag: TAG,
    summary: 'Sandbox: move an order\'s test clock forward; answers once its timers up to then have run', permission: 'erp:write', status: 200,
    temporal: true, params: orderId,
    body: z.strictObject({ frozen_time: z.iso.datetime({ offset: true }).transform((t) => new Date(t)) }), response: procurementOrderSchema,
    async handler(ctx) {
      return { body: await advanceOrderClock(procurement(ctx.deps, ctx.em()), ctx.auth, ctx.params.procurement_order_id, ctx.body.frozen_time) };
    },
  }),
];

export const erpRoutes = [...ledgerRoutes, ...projectRoutes, ...vendorRoutes, ...procurementRoutes];
