import { defineEntity, p, type InferEntity } from '@mikro-orm/core';
import { scopeFilter, scopedColumns } from '../scope.ts';
import type { OrderApproval, OrderBill, OrderItem, OrderReceipt, ProcurementStatus } from '../../workflows/erp/shared.ts';

export const LEDGER_ACCOUNT_TYPES = ['asset', 'liability', 'equity', 'revenue', 'expense'] as const;
export type LedgerAccountType = (typeof LEDGER_ACCOUNT_TYPES)[number];
export const TRANSACTION_TYPES = ['revenue', 'expense', 'refund', 'transfer'] as const;
export type TransactionType = (typeof TRANSACTION_TYPES)[number];
export const PROJECT_STATUSES = ['planned', 'in_progress', 'on_hold', 'completed', 'cancelled'] as const;
export type ProjectStatus = (typeof PROJECT_STATUSES)[number];

/** An account's ledger settings (one per account and mode), created with the default chart on first use. */
export const ErpLedger = defineEntity({
  name: 'ErpLedger',
  tableName: 'erp_ledgers',
  filters: scopeFilter,
  properties: {
    accountId: p.string().primary(),
    livemode: p.boolean().primary(),
    baseCurrency: p.string(),
    defaultTaxRate: p.string().columnType('numeric(7,4)'),
    singleApprovalFrom: p.bigint('number'),
    dualApprovalFrom: p.bigint('number'),
    escalationHours: p.integer(),
    escalationLimit: p.integer(),
    matchTolerancePercent: p.string().columnType('numeric(5,2)'),
    createdAt: p.datetime(),
    updatedAt: p.datetime(),
  },
});
export type ErpLedger = InferEntity<typeof ErpLedger>;

export const LedgerAccount = defineEntity({
  name: 'LedgerAccount',
  tableName: 'ledger_accounts',
  filters: scopeFilter,
  properties: {
    ...scopedColumns(),
    code: p.string(),
    name: p.string(),
    type: p.enum(LEDGER_ACCOUNT_TYPES),
    system: p.boolean(),
    description: p.text().nullable(),
    createdAt: p.datetime(),
  },
});
export type LedgerAccount = InferEntity<typeof LedgerAccount>;

export const ExchangeRate = defineEntity({
  name: 'ExchangeRate',
  tableName: 'ledger_exchange_rates',
  filters: scopeFilter,
  properties: {
    ...scopedColumns(),
    currency: p.string(),
    rate: p.string().columnType('numeric(30,12)'),
    effectiveDate: p.string().columnType('date'),
    createdAt: p.datetime(),
  },
});
export type ExchangeRate = InferEntity<typeof ExchangeRate>;

export const FinancialTransaction = defineEntity({
  name: 'FinancialTransaction',
  tableName: 'financial_transactions',
  filters: scopeFilter,
  properties: {
    ...scopedColumns(),
    type: p.enum(TRANSACTION_TYPES),
    status: p.enum(['posted', 'reversed'] as const),
    amount: p.bigint('number'),
    currency: p.string(),
    baseCurrency: p.string(),
    baseAmount: p.bigint('number'),
    exchangeRate: p.string().columnType('numeric(30,12)'),
    accountCode: p.string(),
    counterAccountCode: p.string(),
    description: p.text().nullable(),
    customerId: p.string().nullable(),
    projectId: p.string().nullable(),
    taxInclusive: p.boolean(),
    taxRate: p.string().columnType('numeric(7,4)'),
    netAmount: p.bigint('number'),
    taxAmount: p.bigint('number'),
    paymentTerms: p.string().nullable(),
    transactionDate: p.string().columnType('date'),
    dueDate: p.string().columnType('date').nullable(),
    discountDate: p.string().columnType('date').nullable(),
    discountPercent: p.string().columnType('numeric(5,2)').nullable(),
    reversalOfId: p.string().nullable(),
    reversedById: p.string().nullable(),
    sourceType: p.enum(['api', 'event', 'procurement', 'reversal'] as const),
    sourceId: p.string().nullable(),
    sourceEventId: p.string().nullable(),
    metadata: p.json<Record<string, string>>(),
    createdAt: p.datetime(),
  },
});
export type FinancialTransaction = InferEntity<typeof FinancialTransaction>;

export const JournalLine = defineEntity({
  name: 'JournalLine',
  tableName: 'journal_lines',
  filters: scopeFilter,
  properties: {
    id: p.bigint('number').primary().autoincrement(),
    accountId: p.string(),
    livemode: p.boolean(),
    transactionId: p.string(),
    lineNo: p.smallint(),
    ledgerCode: p.string(),
    debit: p.bigint('number'),
    credit: p.bigint('number'),
    customerId: p.string().nullable(),
    projectId: p.string().nullable(),
    postedOn: p.string().columnType('date'),
    description: p.text().nullable(),
  },
});
export type JournalLine = InferEntity<typeof JournalLine>;

export interface Milestone {
  name: string;
  weight: number;
  completed: boolean;
  due_date: string | null;
}

export const Project = defineEntity({
  name: 'Project',
  tableName: 'projects',
  filters: scopeFilter,
  properties: {
    ...scopedColumns(),
    name: p.string(),
    description: p.text().nullable(),
    customerId: p.string().nullable(),
    budget: p.bigint('number'),
    currency: p.string(),
    startDate: p.string().columnType('date'),
    endDate: p.string().columnType('date'),
    status: p.enum(PROJECT_STATUSES),
    milestones: p.json<Milestone[]>(),
    budgetExceededAt: p.datetime().nullable(),
    metadata: p.json<Record<string, string>>(),
    createdAt: p.datetime(),
    updatedAt: p.datetime(),
  },
});
export type Project = InferEntity<typeof Project>;

export const Vendor = defineEntity({
  name: 'Vendor',
  tableName: 'vendors',
  filters: scopeFilter,
  properties: {
    ...scopedColumns(),
    name: p.string(),
    email: p.string().nullable(),
    currency: p.string(),
    paymentTerms: p.string(),
    metadata: p.json<Record<string, string>>(),
    createdAt: p.datetime(),
  },
});
export type Vendor = InferEntity<typeof Vendor>;

/** A purchase order: a read model only its workflow (`procurement-order-po_…`) writes. */
export const ProcurementOrder = defineEntity({
  name: 'ProcurementOrder',
  tableName: 'procurement_orders',
  filters: scopeFilter,
  properties: {
    ...scopedColumns(),
    vendorId: p.string(),
    status: p.string().$type<ProcurementStatus>(),
    currency: p.string(),
    total: p.bigint('number'),
    baseTotal: p.bigint('number'),
    items: p.json<OrderItem[]>(),
    approvalRequired: p.boolean(),
    warehouseId: p.string().nullable(),
    projectId: p.string().nullable(),
    createdBy: p.string(),
    approval: p.json<OrderApproval>(),
    escalationCount: p.integer(),
    nextEscalationAt: p.datetime().nullable(),
    vendorReference: p.string().nullable(),
    cancellationReason: p.string().nullable(),
    receipts: p.json<OrderReceipt[]>(),
    bill: p.json<OrderBill>().nullable(),
    workflowId: p.string(),
    testClockTime: p.datetime().nullable(),
    version: p.integer(),
    metadata: p.json<Record<string, string>>(),
    createdAt: p.datetime(),
    updatedAt: p.datetime(),
  },
});
export type ProcurementOrder = InferEntity<typeof ProcurementOrder>;
