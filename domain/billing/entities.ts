import { defineEntity, p, type InferEntity } from '@mikro-orm/core';
import { scopeFilter, scopedColumns } from '../scope.ts';
import type { DunningPolicy, InvoiceLineItem, InvoiceView, UsagePricing } from '../../workflows/billing/shared.ts';

export const BillingPlan = defineEntity({
  name: 'BillingPlan',
  tableName: 'billing_plans',
  filters: scopeFilter,
  properties: {
    ...scopedColumns(),
    name: p.string(),
    currency: p.string(),
    amount: p.bigint('number'),
    interval: p.enum(['monthly', 'quarterly', 'yearly'] as const),
    usage: p.json<UsagePricing>().nullable(),
    dunning: p.json<DunningPolicy>(),
    metadata: p.json<Record<string, string>>(),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});
export type BillingPlan = InferEntity<typeof BillingPlan>;

/** A tax rate of an account for a jurisdiction (e.g. "DE", "US-CA"); applied to every invoice line. */
export const TaxRate = defineEntity({
  name: 'TaxRate',
  tableName: 'billing_tax_rates',
  filters: scopeFilter,
  properties: {
    ...scopedColumns(),
    jurisdiction: p.string(),
    name: p.string(),
    percentage: p.string().columnType('numeric(9,4)'),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});
export type TaxRate = InferEntity<typeof TaxRate>;

export const TestClock = defineEntity({
  name: 'TestClock',
  tableName: 'billing_test_clocks',
  filters: scopeFilter,
  properties: {
    ...scopedColumns(),
    name: p.string().nullable(),
    frozenTime: p.datetime(),
    status: p.enum(['ready', 'advancing'] as const),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});
export type TestClock = InferEntity<typeof TestClock>;

/** The read model of a subscription; only its workflow writes it (see activities/billing.ts). */
export const Subscription = defineEntity({
  name: 'Subscription',
  tableName: 'subscriptions',
  filters: scopeFilter,
  properties: {
    ...scopedColumns(),
    customerId: p.string(),
    planId: p.string(),
    billingCycle: p.string(),
    status: p.string(),
    autoCollection: p.boolean(),
    daysUntilDue: p.integer(),
    trialEnd: p.datetime().nullable(),
    currentPeriodStart: p.datetime(),
    currentPeriodEnd: p.datetime(),
    nextInvoiceDate: p.datetime().nullable(),
    cancelAtPeriodEnd: p.boolean(),
    canceledAt: p.datetime().nullable(),
    pausedAt: p.datetime().nullable(),
    resumesAt: p.datetime().nullable(),
    taxJurisdiction: p.string().nullable(),
    testClockId: p.string().nullable(),
    cardBrand: p.string().nullable(),
    cardLast4: p.string().nullable(),
    cardExpMonth: p.smallint().nullable(),
    cardExpYear: p.smallint().nullable(),
    cardToken: p.string().nullable(),
    /** The gateway that tokenised the card (its token is valid there only); null: none, or not recorded (before 0083). */
    cardGateway: p.string().nullable(),
    workflowId: p.string(),
    version: p.integer(),
    metadata: p.json<Record<string, string>>(),
    createdAt: p.datetime(),
    updatedAt: p.datetime(),
  },
});
export type Subscription = InferEntity<typeof Subscription>;

export const Invoice = defineEntity({
  name: 'Invoice',
  tableName: 'invoices',
  filters: scopeFilter,
  properties: {
    ...scopedColumns(),
    customerId: p.string(),
    subscriptionId: p.string().nullable(),
    number: p.string().nullable(),
    templateId: p.string().nullable(),
    status: p.enum(['draft', 'open', 'paid', 'uncollectible', 'void'] as const),
    currency: p.string(),
    subtotal: p.bigint('number'),
    tax: p.bigint('number'),
    amount: p.bigint('number'),
    amountPaid: p.bigint('number'),
    periodStart: p.datetime(),
    periodEnd: p.datetime(),
    dueDate: p.string().columnType('date'),
    lineItems: p.json<InvoiceLineItem[]>(),
    taxes: p.json<InvoiceView['taxes']>(),
    paymentMethod: p.string().nullable(),
    autoCollection: p.boolean(),
    attemptCount: p.integer(),
    lastPaymentId: p.string().nullable(),
    paidAt: p.datetime().nullable(),
    finalizedAt: p.datetime().nullable(),
    createdAt: p.datetime(),
    updatedAt: p.datetime(),
  },
});
export type Invoice = InferEntity<typeof Invoice>;

export const UsageRecord = defineEntity({
  name: 'UsageRecord',
  tableName: 'usage_records',
  filters: scopeFilter,
  properties: {
    ...scopedColumns(),
    subscriptionId: p.string(),
    metricName: p.string(),
    quantity: p.string().columnType('numeric(20,6)'),
    timestamp: p.datetime(),
    requestIdempotencyKey: p.string().nullable(),
    invoiceId: p.string().nullable(),
    createdAt: p.datetime(),
  },
});
export type UsageRecord = InferEntity<typeof UsageRecord>;
