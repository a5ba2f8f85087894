import type { EntityManager } from '@mikro-orm/postgresql';
import { ApiError, conflict, notFound, validationFailed, type FieldError } from '../../platform/errors.ts';
import { newId } from '../../platform/ids.ts';
import { checkCustomers } from '../customers/public.ts';
import { recordEvent } from '../events/outbox.ts';
import { convertMinorUnits, exponent, toMajorNumber } from '../money.ts';
import { scopeColumns, type Scope } from '../scope.ts';
import { projectView } from './project-view.ts';
import { splitTax, termsDates, percentOf, type PaymentTerms } from './accounting.ts';
import {
  ErpLedger, ExchangeRate, FinancialTransaction, JournalLine, LedgerAccount, Project,
  type LedgerAccountType, type TransactionType,
} from './entities.ts';
import type {
  ErpSettingsView, ExchangeRateView, FinancialTransactionView, LedgerAccountView, TrialBalanceView,
} from './schemas.ts';
import { isUniqueViolation } from '../../db/errors.ts';

/**
 * The general ledger: double entry, in the account's base currency. Every financial transaction is
 * posted as one journal entry whose lines balance to zero (checked here and, at commit, by the
 * database); entries are immutable and corrected by reversal. The ledger of an account and mode
 * starts on first use with the default chart of accounts below (docs/erp.md).
 */

export const DEFAULT_BASE_CURRENCY = 'USD';

export const CHART = {
  cash: '1000', clearing: '1010', receivable: '1200', inventory: '1300', inputTax: '1400',
  payable: '2000', grni: '2100', taxPayable: '2200',
  equity: '3000', retained: '3900',
  revenue: '4000', returns: '4100',
  cogs: '5000', priceVariance: '5100', expenses: '6000', projectCosts: '6100',
} as const;

export const DEFAULT_CHART: readonly { code: string; name: string; type: LedgerAccountType; description: string }[] = [
  { code: '1000', name: 'Cash and bank', type: 'asset', description: 'Bank accounts; refunds are paid from here.' },
  { code: '1010', name: 'Payment gateway clearing', type: 'asset', description: 'Succeeded card payments, until the gateway settles them to the bank.' },
  { code: '1200', name: 'Accounts receivable', type: 'asset', description: 'What customers owe (revenue transactions, paid invoices).' },
  { code: '1300', name: 'Inventory', type: 'asset', description: 'Stock received on purchase orders, at the order price.' },
  { code: '1400', name: 'Input tax receivable', type: 'asset', description: 'Tax on purchases, reclaimable.' },
  { code: '2000', name: 'Accounts payable', type: 'liability', description: 'What the business owes vendors (expenses, matched vendor bills).' },
  { code: '2100', name: 'Goods received not invoiced', type: 'liability', description: 'Receipts awaiting their vendor bill (cleared by the three-way match).' },
  { code: '2200', name: 'Tax payable', type: 'liability', description: 'Tax collected on sales.' },
  { code: '3000', name: 'Owner\'s equity', type: 'equity', description: 'Capital contributed.' },
  { code: '3900', name: 'Retained earnings', type: 'equity', description: 'Accumulated profit.' },
  { code: '4000', name: 'Sales revenue', type: 'revenue', description: 'Revenue from sales and paid invoices.' },
  { code: '4100', name: 'Sales returns and refunds', type: 'revenue', description: 'Contra-revenue: refunds to customers.' },
  { code: '5000', name: 'Cost of goods sold', type: 'expense', description: 'Cost of what was sold.' },
  { code: '5100', name: 'Purchase price variance', type: 'expense', description: 'Vendor bill minus received value, within the match tolerance.' },
  { code: '6000', name: 'Operating expenses', type: 'expense', description: 'General expenses.' },
  { code: '6100', name: 'Project costs', type: 'expense', description: 'Costs booked against projects.' },
];

/** Which account types each transaction type's `account_code` may name, and its default. */
const ACCOUNT_RULES: Record<TransactionType, { types: readonly LedgerAccountType[]; default: string | null; counter: string }> = {
  revenue: { types: ['revenue'], default: CHART.revenue, counter: CHART.receivable },
  expense: { types: ['expense', 'asset'], default: CHART.expenses, counter: CHART.payable },
  refund: { types: ['revenue', 'expense'], default: CHART.returns, counter: CHART.cash },
  transfer: { types: ['asset', 'liability', 'equity'], default: null, counter: CHART.cash },
};

// ---- Ledger settings and chart ------------------------------------------------------------------

export interface LedgerSettings {
  baseCurrency: string;
  defaultTaxRate: string;
  singleApprovalFrom: number;
  dualApprovalFrom: number;
  escalationHours: number;
  escalationLimit: number;
  matchTolerancePercent: string;
}

function settingsOf(l: ErpLedger): LedgerSettings {
  return {
    baseCurrency: l.baseCurrency, defaultTaxRate: l.defaultTaxRate, singleApprovalFrom: l.singleApprovalFrom,
    dualApprovalFrom: l.dualApprovalFrom, escalationHours: l.escalationHours, escalationLimit: l.escalationLimit,
    matchTolerancePercent: l.matchTolerancePercent,
  };
}

interface LedgerRow {
  base_currency: string;
  default_tax_rate: string;
  single_approval_from: string;
  dual_approval_from: string;
  escalation_hours: number;
  escalation_limit: number;
  match_tolerance_percent: string;
}

async function readLedger(em: EntityManager, scope: Scope): Promise<LedgerSettings | null> {
  // Plain SQL: this runs on every posting, and an EntityManager lookup costs several times the round trip.
  const rows = await em.execute<LedgerRow[]>(
    `select base_currency, default_tax_rate::text, single_approval_from::text, dual_approval_from::text, escalation_hours, escalation_limit,
            match_tolerance_percent::text from erp_ledgers where account_id = ? and livemode = ?`,
    [scope.accountId, scope.livemode],
  );
  const r = rows[0];
  return r ? {
    baseCurrency: r.base_currency, defaultTaxRate: r.default_tax_rate, singleApprovalFrom: Number(r.single_approval_from),
    dualApprovalFrom: Number(r.dual_approval_from), escalationHours: r.escalation_hours, escalationLimit: r.escalation_limit,
    matchTolerancePercent: r.match_tolerance_percent,
  } : null;
}

/** The ledger of `scope`, created (settings and the default chart) on first use. */
export async function ensureLedger(em: EntityManager, scope: Scope): Promise<LedgerSettings> {
  const found = await readLedger(em, scope);
  if (found) return found;
  const unit = 10 ** exponent(DEFAULT_BASE_CURRENCY);
  await em.execute(
    `insert into erp_ledgers (account_id, livemode, base_currency, default_tax_rate, single_approval_from, dual_approval_from,
       escalation_hours, escalation_limit, match_tolerance_percent, created_at, updated_at)
     values (?, ?, ?, 0, ?, ?, 48, 3, 2, now(), now()) on conflict do nothing`,
    [scope.accountId, scope.livemode, DEFAULT_BASE_CURRENCY, 1000 * unit, 10_000 * unit],
  );
  await em.execute(
    `insert into ledger_accounts (id, account_id, livemode, code, name, type, system, description, created_at)
     select id, ?, ?, code, name, type, true, description, now()
       from jsonb_to_recordset(?::jsonb) as t(id text, code text, name text, type text, description text)
     on conflict (account_id, livemode, code) do nothing`,
    [scope.accountId, scope.livemode, JSON.stringify(DEFAULT_CHART.map((a) => ({ ...a, id: newId('ledgerAccount') })))],
  );
  return (await readLedger(em, scope))!;
}

/** True when the ledger of the em's scope has started (other areas' events post only then). */
export async function ledgerStarted(em: EntityManager, scope: Scope): Promise<boolean> {
  return (await em.count(ErpLedger, { accountId: scope.accountId, livemode: scope.livemode })) > 0;
}

export function settingsView(scope: Scope, s: LedgerSettings): ErpSettingsView {
  return {
    object: 'erp_settings', livemode: scope.livemode, base_currency: s.baseCurrency, default_tax_rate: s.defaultTaxRate,
    approval_tiers: {
      single_approval_from: toMajorNumber(s.singleApprovalFrom, s.baseCurrency),
      dual_approval_from: toMajorNumber(s.dualApprovalFrom, s.baseCurrency),
    },
    escalation_hours: s.escalationHours, escalation_limit: s.escalationLimit, match_tolerance_percent: s.matchTolerancePercent,
  };
}

export interface SettingsChange {
  baseCurrency?: string;
  defaultTaxRate?: string;
  singleApprovalFrom?: number;
  dualApprovalFrom?: number;
  escalationHours?: number;
  escalationLimit?: number;
  matchTolerancePercent?: string;
}

export async function updateSettings(em: EntityManager, scope: Scope, change: SettingsChange): Promise<ErpSettingsView> {
  await ensureLedger(em, scope);
  const ledger = await em.findOneOrFail(ErpLedger, { accountId: scope.accountId, livemode: scope.livemode });
  if (change.baseCurrency && change.baseCurrency !== ledger.baseCurrency) {
    if (await em.count(FinancialTransaction, {})) {
      throw conflict('base_currency_locked', `The ledger already holds transactions in ${ledger.baseCurrency}; its base currency can no longer change.`,
        'Keep the base currency, or use another account (or mode) for a ledger in another currency.', { current_state: ledger.baseCurrency });
    }
    // Thresholds are kept in minor units of the base currency: re-express them in the new one.
    const factor = 10 ** (exponent(change.baseCurrency) - exponent(ledger.baseCurrency));
    ledger.singleApprovalFrom = Math.round(ledger.singleApprovalFrom * factor);
    ledger.dualApprovalFrom = Math.round(ledger.dualApprovalFrom * factor);
    ledger.baseCurrency = change.baseCurrency;
  }
  if (change.defaultTaxRate !== undefined) ledger.defaultTaxRate = change.defaultTaxRate;
  if (change.singleApprovalFrom !== undefined) ledger.singleApprovalFrom = change.singleApprovalFrom;
  if (change.dualApprovalFrom !== undefined) ledger.dualApprovalFrom = change.dualApprovalFrom;
  if (change.escalationHours !== undefined) ledger.escalationHours = change.escalationHours;
  if (change.escalationLimit !== undefined) ledger.escalationLimit = change.escalationLimit;
  if (change.matchTolerancePercent !== undefined) ledger.matchTolerancePercent = change.matchTolerancePercent;
  if (ledger.dualApprovalFrom < ledger.singleApprovalFrom) {
    throw validationFailed([{ path: 'approval_tiers.dual_approval_from', message: 'must be at least single_approval_from' }]);
  }
  ledger.updatedAt = new Date();
  await em.flush();
  return settingsView(scope, settingsOf(ledger));
}

export function ledgerAccountView(a: LedgerAccount): LedgerAccountView {
  return {
    id: a.id, object: 'ledger_account', livemode: a.livemode, code: a.code, name: a.name, type: a.type, system: a.system,
    description: a.description ?? null, created_at: a.createdAt.toISOString(),
  };
}

export async function listLedgerAccounts(em: EntityManager, scope: Scope): Promise<LedgerAccountView[]> {
  await ensureLedger(em, scope);
  return (await em.find(LedgerAccount, {}, { orderBy: { code: 'asc' } })).map(ledgerAccountView);
}

export async function createLedgerAccount(
  em: EntityManager, scope: Scope, input: { code: string; name: string; type: LedgerAccountType; description: string | null },
): Promise<LedgerAccountView> {
  await ensureLedger(em, scope);
  const existing = await em.findOne(LedgerAccount, { code: input.code });
  if (existing) {
    throw conflict('ledger_account_exists', `The chart of accounts already has an account ${input.code} (${existing.name}).`,
      'Choose another code, or use the existing account.', { current_state: 'exists' });
  }
  const account = em.create(LedgerAccount, {
    id: newId('ledgerAccount'), ...scopeColumns(scope), code: input.code, name: input.name, type: input.type, system: false,
    description: input.description, createdAt: new Date(),
  });
  await em.flush();
  return ledgerAccountView(account);
}

interface ChartEntry {
  name: string;
  type: LedgerAccountType;
}

/**
 * Charts of accounts read once per process and account: an account's code, name and type never
 * change (there is no update), so a cached chart is only ever missing accounts added since, and a
 * lookup of a code it lacks reads the chart again.
 */
const charts = new Map<string, Map<string, ChartEntry>>();

async function chartOf(em: EntityManager, scope: Scope, codes: readonly string[] = []): Promise<Map<string, ChartEntry>> {
  const key = `${scope.accountId}:${scope.livemode}`;
  const cached = charts.get(key);
  if (cached && codes.every((c) => cached.has(c))) return cached;
  const rows = await em.execute<{ code: string; name: string; type: LedgerAccountType }[]>(
    'select code, name, type from ledger_accounts where account_id = ? and livemode = ?', [scope.accountId, scope.livemode],
  );
  const chart = new Map(rows.map((r) => [r.code, { name: r.name, type: r.type }]));
  if (charts.size > 10_000) charts.clear();
  charts.set(key, chart);
  return chart;
}

// ---- Exchange rates -----------------------------------------------------------------------------

export function exchangeRateView(r: ExchangeRate, base: string): ExchangeRateView {
  return {
    id: r.id, object: 'exchange_rate', livemode: r.livemode, currency: r.currency, base_currency: base, rate: normalizeRate(r.rate),
    effective_date: r.effectiveDate, created_at: r.createdAt.toISOString(),
  };
}

function normalizeRate(rate: string): string {
  return rate.includes('.') ? rate.replace(/0+$/, '').replace(/\.$/, '') : rate;
}

export async function setExchangeRate(
  em: EntityManager, scope: Scope, input: { currency: string; rate: string; effectiveDate: string },
): Promise<ExchangeRateView> {
  const ledger = await ensureLedger(em, scope);
  if (input.currency === ledger.baseCurrency) {
    throw validationFailed([{ path: 'currency', message: `${input.currency} is the ledger's base currency (its rate is always 1); send another currency` }]);
  }
  await em.execute(
    `insert into ledger_exchange_rates (id, account_id, livemode, currency, rate, effective_date, created_at) values (?, ?, ?, ?, ?, ?, now())
     on conflict (account_id, livemode, currency, effective_date) do update set rate = excluded.rate`,
    [newId('exchangeRate'), scope.accountId, scope.livemode, input.currency, input.rate, input.effectiveDate],
  );
  const row = await em.findOneOrFail(ExchangeRate, { currency: input.currency, effectiveDate: input.effectiveDate }, { refresh: true });
  return exchangeRateView(row, ledger.baseCurrency);
}

export async function listExchangeRates(em: EntityManager, scope: Scope, currency?: string): Promise<ExchangeRateView[]> {
  const ledger = await ensureLedger(em, scope);
  const rows = await em.find(ExchangeRate, currency ? { currency } : {}, { orderBy: { currency: 'asc', effectiveDate: 'desc' }, limit: 100 });
  return rows.map((r) => exchangeRateView(r, ledger.baseCurrency));
}

/** Units of the base currency per unit of `currency` on `date` (the latest rate in effect); null when none is stored. */
export async function rateOn(em: EntityManager, base: string, currency: string, date: string): Promise<string | null> {
  if (currency === base) return '1';
  const row = await em.findOne(ExchangeRate, { currency, effectiveDate: { $lte: date } }, { orderBy: { effectiveDate: 'desc' } });
  return row ? row.rate : null;
}

export function missingRate(path: string, currency: string, base: string, date: string): FieldError {
  return {
    path,
    message: `no exchange rate from ${currency} to the ledger's base currency ${base} in effect on ${date}; add one with POST /v3/financial/exchange_rates`,
  };
}

// ---- Posting ------------------------------------------------------------------------------------

export interface PostingLine {
  code: string;
  debit: number;
  credit: number;
  description?: string | null;
}

export interface EntryHeader {
  id: string;
  type: TransactionType;
  amount: number;
  currency: string;
  baseCurrency: string;
  baseAmount: number;
  exchangeRate: string;
  accountCode: string;
  counterAccountCode: string;
  description: string | null;
  customerId: string | null;
  projectId: string | null;
  taxInclusive: boolean;
  taxRate: string;
  netAmount: number;
  taxAmount: number;
  paymentTerms: PaymentTerms | null;
  transactionDate: string;
  dueDate: string | null;
  discountDate: string | null;
  discountPercent: string | null;
  reversalOfId: string | null;
  sourceType: 'api' | 'event' | 'procurement' | 'reversal';
  sourceId: string | null;
  sourceEventId: string | null;
  metadata: Record<string, string>;
}

/** A ledger invariant broken by our own code (never by a request): 500, never committed. */
class UnbalancedEntryError extends Error {}

export interface WrittenEntry {
  transaction: FinancialTransaction;
  lines: JournalLine[];
  /** False when a transaction with this id existed already (nothing was written). */
  inserted: boolean;
}

/**
 * Writes one journal entry (the transaction and its lines) in one statement, so it commits whole
 * even outside a transaction: zero lines are dropped; the lines must balance (and the database
 * checks it again at commit). An id that exists already writes nothing (`inserted: false`).
 * Expenses tagged with a project may push it over budget: `project.budget_exceeded` is recorded
 * once (see noteBudget; in `tx`'s transaction when it has one).
 */
export async function writeEntry(tx: EntityManager, scope: Scope, header: EntryHeader, lines: PostingLine[], requestId: string | null): Promise<WrittenEntry> {
  const kept = lines.filter((l) => l.debit !== 0 || l.credit !== 0);
  const balance = kept.reduce((s, l) => s + l.debit - l.credit, 0);
  if (balance !== 0 || kept.some((l) => l.debit < 0 || l.credit < 0 || !Number.isSafeInteger(l.debit) || !Number.isSafeInteger(l.credit))) {
    throw new UnbalancedEntryError(`journal entry ${header.id} does not balance (${balance})`);
  }
  const createdAt = new Date();
  const h = header;
  const rows = await tx.execute<{ n: number }[]>(
    `with t as (
       insert into financial_transactions (id, account_id, livemode, type, status, amount, currency, base_currency, base_amount, exchange_rate,
         account_code, counter_account_code, description, customer_id, project_id, tax_inclusive, tax_rate, net_amount, tax_amount, payment_terms,
         transaction_date, due_date, discount_date, discount_percent, reversal_of_id, reversed_by_id, source_type, source_id, source_event_id,
         metadata, created_at)
       values (?, ?, ?, ?, 'posted', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, null, ?, ?, ?, ?::jsonb, ?)
       on conflict (id) do nothing returning id
     ), l as (
       insert into journal_lines (account_id, livemode, transaction_id, line_no, ledger_code, debit, credit, customer_id, project_id, posted_on, description)
       select ?, ?, t.id, x.line_no, x.code, x.debit, x.credit, ?, ?, ?::date, x.description
         from t cross join jsonb_to_recordset(?::jsonb) as x(line_no int, code text, debit bigint, credit bigint, description text)
       returning 1
     )
     select (select count(*) from t)::int as n`,
    [
      h.id, scope.accountId, scope.livemode, h.type, h.amount, h.currency, h.baseCurrency, h.baseAmount, h.exchangeRate, h.accountCode,
      h.counterAccountCode, h.description, h.customerId, h.projectId, h.taxInclusive, h.taxRate, h.netAmount, h.taxAmount, h.paymentTerms,
      h.transactionDate, h.dueDate, h.discountDate, h.discountPercent, h.reversalOfId, h.sourceType, h.sourceId, h.sourceEventId,
      JSON.stringify(h.metadata), createdAt,
      scope.accountId, scope.livemode, h.customerId, h.projectId, h.transactionDate,
      JSON.stringify(kept.map((l, i) => ({ line_no: i + 1, code: l.code, debit: l.debit, credit: l.credit, description: l.description ?? null }))),
    ],
  );
  const inserted = rows[0]?.n === 1;
  if (inserted && header.projectId) await noteBudget(tx, scope, header.projectId, requestId);
  const transaction = { ...header, ...scopeColumns(scope), status: 'posted', reversedById: null, createdAt } as FinancialTransaction;
  const written = kept.map((l, i) => ({
    ...scopeColumns(scope), transactionId: header.id, lineNo: i + 1, ledgerCode: l.code, debit: l.debit, credit: l.credit,
    customerId: header.customerId, projectId: header.projectId, postedOn: header.transactionDate, description: l.description ?? null,
  }) as JournalLine);
  return { transaction, lines: written, inserted };
}

/** Records `project.budget_exceeded` the first time the project's spending passes its budget (once: a conditional update). */
export async function noteBudget(em: EntityManager, scope: Scope, projectId: string, requestId: string | null): Promise<void> {
  const { spent } = await projectTotals(em, scope, projectId);
  await em.transactional(async (tx) => {
    const rows = await tx.execute<{ id: string }[]>(
      `update projects set budget_exceeded_at = now() where id = ? and account_id = ? and livemode = ? and budget_exceeded_at is null and budget < ?
       returning id`,
      [projectId, scope.accountId, scope.livemode, spent],
    );
    if (!rows.length) return;
    const project = await tx.findOneOrFail(Project, { id: projectId }, { refresh: true });
    recordEvent(tx, scope, { type: 'project.budget_exceeded', object: projectView(project), customerId: project.customerId ?? null, requestId });
    await tx.flush();
  });
}

/** Net spending (expense accounts, debit − credit) and revenue (revenue accounts, credit − debit) of a project up to `asOf`. */
export async function projectTotals(em: EntityManager, scope: Scope, projectId: string, asOf?: string): Promise<{ spent: number; revenue: number }> {
  const rows = await em.execute<{ spent: string | null; revenue: string | null }[]>(
    `select sum(case when a.type = 'expense' then l.debit - l.credit else 0 end)::text as spent,
            sum(case when a.type = 'revenue' then l.credit - l.debit else 0 end)::text as revenue
       from journal_lines l join ledger_accounts a on a.account_id = l.account_id and a.livemode = l.livemode and a.code = l.ledger_code
      where l.account_id = ? and l.livemode = ? and l.project_id = ?${asOf ? ' and l.posted_on <= ?' : ''}`,
    [scope.accountId, scope.livemode, projectId, ...(asOf ? [asOf] : [])],
  );
  return { spent: Number(rows[0]?.spent ?? 0), revenue: Number(rows[0]?.revenue ?? 0) };
}

export interface TransactionInput {
  id: string;
  type: TransactionType;
  /** Minor units of `currency`. */
  amount: number;
  currency: string;
  accountCode: string | null;
  counterAccountCode: string | null;
  description: string | null;
  customerId: string | null;
  projectId: string | null;
  taxInclusive: boolean;
  /** Percent as a decimal string; null: the ledger's default (0 unless set). */
  taxRate: string | null;
  paymentTerms: PaymentTerms | null;
  date: string;
  metadata: Record<string, string>;
}

/** The lines of a transaction of `type`, in the base currency. */
export function linesFor(type: TransactionType, codes: { account: string; counter: string }, gross: number, net: number, tax: number): PostingLine[] {
  switch (type) {
    case 'revenue':
      return [
        { code: codes.counter, debit: gross, credit: 0 },
        { code: codes.account, debit: 0, credit: net },
        { code: CHART.taxPayable, debit: 0, credit: tax, description: 'Tax' },
      ];
    case 'expense':
      return [
        { code: codes.account, debit: net, credit: 0 },
        { code: CHART.inputTax, debit: tax, credit: 0, description: 'Input tax' },
        { code: codes.counter, debit: 0, credit: gross },
      ];
    case 'refund':
      return [
        { code: codes.account, debit: net, credit: 0 },
        { code: CHART.taxPayable, debit: tax, credit: 0, description: 'Tax refunded' },
        { code: codes.counter, debit: 0, credit: gross },
      ];
    case 'transfer':
      return [
        { code: codes.account, debit: gross, credit: 0 },
        { code: codes.counter, debit: 0, credit: gross },
      ];
  }
}

/**
 * Posts a transaction (POST /v3/financial/transactions): checks every field against the chart, the
 * customers, projects and exchange rates (422 naming each bad field), splits the tax, converts to
 * the base currency and writes the balanced entry. The same id answers the same transaction
 * (a retry with the request's Idempotency-Key).
 */
export async function postTransaction(em: EntityManager, scope: Scope, input: TransactionInput, requestId: string | null): Promise<FinancialTransactionView> {
  const ledger = await ensureLedger(em, scope);
  const rules = ACCOUNT_RULES[input.type];
  const errors: FieldError[] = [];
  const accountCode = input.accountCode ?? rules.default;
  const counterCode = input.counterAccountCode ?? rules.counter;
  const chart = await chartOf(em, scope, [accountCode ?? CHART.cash, counterCode, CHART.taxPayable, CHART.inputTax]);
  if (!accountCode) {
    errors.push({ path: 'account_code', message: 'a transfer needs account_code: the account that receives the amount (e.g. 1010); counter_account_code (default 1000) gives it' });
  } else {
    const account = chart.get(accountCode);
    if (!account) errors.push({ path: 'account_code', message: `no account ${accountCode} in the chart of accounts; list them with GET /v3/financial/accounts or add one with POST /v3/financial/accounts` });
    else if (!rules.types.includes(account.type)) {
      errors.push({ path: 'account_code', message: `account ${accountCode} (${account.name}) is a ${account.type} account; a ${input.type} transaction books to a ${rules.types.join(' or ')} account` });
    }
  }
  if (!chart.has(counterCode)) errors.push({ path: 'counter_account_code', message: `no account ${counterCode} in the chart of accounts` });
  if (accountCode && accountCode === counterCode) errors.push({ path: 'counter_account_code', message: 'must differ from account_code' });
  const taxRate = input.taxRate ?? (input.type === 'transfer' ? '0' : ledger.defaultTaxRate);
  if (input.type === 'transfer' && Number(taxRate) !== 0) errors.push({ path: 'tax_rate', message: 'a transfer carries no tax; omit tax_rate' });
  if (input.paymentTerms && (input.type === 'refund' || input.type === 'transfer')) {
    errors.push({ path: 'payment_terms', message: 'payment terms apply to revenue and expense transactions only' });
  }
  errors.push(...await checkCustomers(em, input.customerId ? [['customer_id', input.customerId]] : []));
  if (input.projectId) {
    const project = await em.findOne(Project, { id: input.projectId });
    if (!project) errors.push({ path: 'project_id', message: `no project with id '${input.projectId}' exists in this account and mode` });
  }
  const rate = await rateOn(em, ledger.baseCurrency, input.currency, input.date);
  if (!rate) errors.push(missingRate('currency', input.currency, ledger.baseCurrency, input.date));
  if (errors.length) throw validationFailed(errors);

  const split = splitTax(input.amount, taxRate, input.taxInclusive);
  const toBase = (minor: number) => convertMinorUnits(minor, input.currency, ledger.baseCurrency, rate!);
  const grossBase = toBase(split.gross);
  const taxBase = toBase(split.tax);
  const netBase = grossBase - taxBase; // any rounding of the conversion stays on the net line too
  if (grossBase <= 0) {
    throw validationFailed([{ path: 'amount', message: `${input.amount} minor units of ${input.currency} round to nothing in ${ledger.baseCurrency}; send a larger amount` }]);
  }
  const terms = input.paymentTerms ? termsDates(input.date, input.paymentTerms) : null;
  const header: EntryHeader = {
    id: input.id, type: input.type, amount: input.amount, currency: input.currency, baseCurrency: ledger.baseCurrency,
    baseAmount: grossBase, exchangeRate: rate!, accountCode: accountCode!, counterAccountCode: counterCode,
    description: input.description, customerId: input.customerId, projectId: input.projectId, taxInclusive: input.taxInclusive,
    taxRate, netAmount: split.net, taxAmount: split.tax, paymentTerms: input.paymentTerms, transactionDate: input.date,
    dueDate: terms?.dueDate ?? null, discountDate: terms?.discountDate ?? null, discountPercent: terms?.discountPercent ?? null,
    reversalOfId: null, sourceType: 'api', sourceId: null, sourceEventId: null, metadata: input.metadata,
  };
  const lines = linesFor(input.type, { account: accountCode!, counter: counterCode }, grossBase, netBase, taxBase);
  const written = await writeEntry(em, scope, header, lines, requestId);
  // Not inserted: the same id was posted before (a retry with the request's Idempotency-Key).
  if (!written.inserted) return getTransaction(em, scope, input.id);
  return transactionView(written.transaction, written.lines, chart);
}

/** Posts the mirror entry of `id` (debits and credits swapped) and marks `id` reversed; once only. */
export async function reverseTransaction(
  em: EntityManager, scope: Scope, id: string, input: { reversalId: string; date: string | null; description: string | null }, requestId: string | null,
): Promise<FinancialTransactionView> {
  const already = await em.findOne(FinancialTransaction, { id: input.reversalId });
  if (already) return getTransaction(em, scope, already.id);
  const original = await em.findOne(FinancialTransaction, { id });
  if (!original) throw notFound('financial transaction', id);
  const refuse = (state: string, detail: string) => conflict('invalid_state_transition', detail,
    'A posted transaction is reversed once; to change a reversal, post a new transaction.', { current_state: state });
  if (original.reversalOfId) throw refuse('posted', `Transaction ${id} is itself the reversal of ${original.reversalOfId}; it cannot be reversed.`);
  const date = input.date ?? new Date().toISOString().slice(0, 10);
  if (date < original.transactionDate) {
    throw validationFailed([{ path: 'date', message: `the reversal cannot be dated before the transaction it reverses (${original.transactionDate})` }]);
  }
  try {
    await em.transactional(async (tx) => {
      const locked = await tx.execute<{ status: string; reversed_by_id: string | null }[]>(
        'select status, reversed_by_id from financial_transactions where id = ? and account_id = ? and livemode = ? for update',
        [id, scope.accountId, scope.livemode],
      );
      if (locked[0]?.status !== 'posted') throw refuse('reversed', `Transaction ${id} was already reversed by ${locked[0]?.reversed_by_id}.`);
      const lines = await tx.find(JournalLine, { transactionId: id }, { orderBy: { lineNo: 'asc' } });
      const header: EntryHeader = {
        id: input.reversalId, type: original.type, amount: original.amount, currency: original.currency, baseCurrency: original.baseCurrency,
        baseAmount: original.baseAmount, exchangeRate: original.exchangeRate, accountCode: original.accountCode,
        counterAccountCode: original.counterAccountCode, description: input.description ?? `Reversal of ${id}`,
        customerId: original.customerId ?? null, projectId: original.projectId ?? null, taxInclusive: original.taxInclusive,
        taxRate: original.taxRate, netAmount: original.netAmount, taxAmount: original.taxAmount, paymentTerms: null, transactionDate: date,
        dueDate: null, discountDate: null, discountPercent: null, reversalOfId: id, sourceType: 'reversal', sourceId: id, sourceEventId: null,
        metadata: {},
      };
      await writeEntry(tx, scope, header, lines.map((l) => ({ code: l.ledgerCode, debit: l.credit, credit: l.debit, description: l.description ?? null })), requestId);
      await tx.execute(
        `update financial_transactions set status = 'reversed', reversed_by_id = ? where id = ? and account_id = ? and livemode = ?`,
        [input.reversalId, id, scope.accountId, scope.livemode],
      );
    });
  } catch (err) {
    if (isUniqueViolation(err)) {
      const fresh = await em.findOne(FinancialTransaction, { id }, { refresh: true });
      throw refuse('reversed', `Transaction ${id} was already reversed by ${fresh?.reversedById ?? 'another transaction'}.`);
    }
    throw err;
  }
  return getTransaction(em, scope, input.reversalId);
}

// ---- Reads --------------------------------------------------------------------------------------

export function transactionView(t: FinancialTransaction, lines: JournalLine[], chart: Map<string, ChartEntry>): FinancialTransactionView {
  const base = t.baseCurrency;
  const discountAmount = t.discountPercent ? percentOf(t.amount + (t.taxInclusive ? 0 : t.taxAmount), t.discountPercent) : 0;
  return {
    id: t.id, object: 'financial_transaction', livemode: t.livemode, type: t.type, status: t.status,
    amount: toMajorNumber(t.amount, t.currency), amount_minor: t.amount, currency: t.currency, base_currency: base,
    base_amount: toMajorNumber(t.baseAmount, base), exchange_rate: normalizeRate(t.exchangeRate),
    net_amount: toMajorNumber(t.netAmount, t.currency), tax_amount: toMajorNumber(t.taxAmount, t.currency), tax_rate: Number(t.taxRate).toFixed(4),
    tax_inclusive: t.taxInclusive, account_code: t.accountCode, counter_account_code: t.counterAccountCode,
    description: t.description ?? null, customer_id: t.customerId ?? null, project_id: t.projectId ?? null, date: t.transactionDate,
    payment_terms: (t.paymentTerms ?? null) as FinancialTransactionView['payment_terms'], due_date: t.dueDate ?? null,
    early_payment_discount: t.discountDate && t.discountPercent
      ? { date: t.discountDate, percent: Number(t.discountPercent).toFixed(2), amount: toMajorNumber(discountAmount, t.currency) }
      : null,
    journal_lines: [...lines].sort((a, b) => a.lineNo - b.lineNo).map((l) => ({
      line: l.lineNo, account_code: l.ledgerCode, account_name: chart.get(l.ledgerCode)?.name ?? l.ledgerCode,
      debit: toMajorNumber(l.debit, base), credit: toMajorNumber(l.credit, base), debit_minor: l.debit, credit_minor: l.credit,
      description: l.description ?? null,
    })),
    reversal_of: t.reversalOfId ?? null, reversed_by: t.reversedById ?? null,
    source: { type: t.sourceType, id: t.sourceId ?? null, event_id: t.sourceEventId ?? null },
    metadata: t.metadata, created_at: t.createdAt.toISOString(),
  };
}

async function views(em: EntityManager, rows: FinancialTransaction[]): Promise<FinancialTransactionView[]> {
  if (!rows.length) return [];
  const lines = await em.find(JournalLine, { transactionId: { $in: rows.map((r) => r.id) } });
  const names = await chartOf(em, { accountId: rows[0]!.accountId, livemode: rows[0]!.livemode }, [...new Set(lines.map((l) => l.ledgerCode))]);
  const byTxn = new Map<string, JournalLine[]>();
  for (const l of lines) byTxn.set(l.transactionId, [...(byTxn.get(l.transactionId) ?? []), l]);
  return rows.map((r) => transactionView(r, byTxn.get(r.id) ?? [], names));
}

export async function getTransaction(em: EntityManager, _scope: Scope, id: string): Promise<FinancialTransactionView> {
  const row = await em.findOne(FinancialTransaction, { id });
  if (!row) throw notFound('financial transaction', id);
  return (await views(em, [row]))[0]!;
}

export interface TransactionFilters {
  dateGte?: string | undefined;
  dateLte?: string | undefined;
  accountCode?: string | undefined;
  customerId?: string | undefined;
  projectId?: string | undefined;
  type?: TransactionType[] | undefined;
}

export async function listTransactions(
  em: EntityManager, scope: Scope, filters: TransactionFilters, page: { where: Record<string, unknown>; direction: 'asc' | 'desc'; limit: number },
): Promise<FinancialTransactionView[]> {
  const where: string[] = ['t.account_id = ?', 't.livemode = ?'];
  const args: unknown[] = [scope.accountId, scope.livemode];
  const after = (page.where.id as { $lt?: string; $gt?: string } | undefined);
  if (after?.$lt) { where.push('t.id < ?'); args.push(after.$lt); }
  if (after?.$gt) { where.push('t.id > ?'); args.push(after.$gt); }
  if (filters.dateGte) { where.push('t.transaction_date >= ?'); args.push(filters.dateGte); }
  if (filters.dateLte) { where.push('t.transaction_date <= ?'); args.push(filters.dateLte); }
  if (filters.customerId) { where.push('t.customer_id = ?'); args.push(filters.customerId); }
  if (filters.projectId) { where.push('t.project_id = ?'); args.push(filters.projectId); }
  if (filters.type?.length) { where.push('t.type in (select jsonb_array_elements_text(?::jsonb))'); args.push(JSON.stringify(filters.type)); }
  if (filters.accountCode) {
    where.push('exists (select 1 from journal_lines l where l.transaction_id = t.id and l.ledger_code = ?)');
    args.push(filters.accountCode);
  }
  const ids = await em.execute<{ id: string }[]>(
    `select t.id from financial_transactions t where ${where.join(' and ')} order by t.id ${page.direction} limit ?`, [...args, page.limit + 1],
  );
  if (!ids.length) return [];
  const rows = await em.find(FinancialTransaction, { id: { $in: ids.map((r) => r.id) } }, { orderBy: { id: page.direction } });
  return views(em, rows);
}

/** Sums of debits and credits per account up to `asOf` (inclusive); debits equal credits. */
export async function trialBalance(em: EntityManager, scope: Scope, asOf: string): Promise<TrialBalanceView> {
  const ledger = await ensureLedger(em, scope);
  const rows = await em.execute<{ code: string; name: string; type: string; debit: string; credit: string }[]>(
    `select a.code, a.name, a.type, coalesce(sum(l.debit), 0)::text as debit, coalesce(sum(l.credit), 0)::text as credit
       from ledger_accounts a
       join journal_lines l on l.account_id = a.account_id and l.livemode = a.livemode and l.ledger_code = a.code and l.posted_on <= ?
      where a.account_id = ? and a.livemode = ?
      group by a.code, a.name, a.type order by a.code`,
    [asOf, scope.accountId, scope.livemode],
  );
  const base = ledger.baseCurrency;
  let debit = 0n;
  let credit = 0n;
  const accounts = rows.map((r) => {
    debit += BigInt(r.debit);
    credit += BigInt(r.credit);
    const d = Number(r.debit);
    const c = Number(r.credit);
    return {
      code: r.code, name: r.name, type: r.type, debit: toMajorNumber(d, base), credit: toMajorNumber(c, base), debit_minor: d, credit_minor: c,
      balance: toMajorNumber(BigInt(r.debit) - BigInt(r.credit), base),
    };
  });
  return {
    object: 'trial_balance', livemode: scope.livemode, as_of: asOf, currency: base, accounts,
    total_debit: toMajorNumber(debit, base), total_credit: toMajorNumber(credit, base),
    total_debit_minor: Number(debit), total_credit_minor: Number(credit), balanced: debit === credit,
  };
}

export function ledgerRefusal(detail: string, suggestion: string): ApiError {
  return new ApiError({ status: 422, code: 'validation_failed', title: 'Validation Failed', detail, suggestion });
}
