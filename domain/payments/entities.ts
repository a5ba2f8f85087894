import { defineEntity, p, type InferEntity } from '@mikro-orm/core';
import { scopeFilter, scopedColumns } from '../scope.ts';
import type { PaymentRouting, RoutingConditions } from './schemas.ts';

export const PAYMENT_STATUSES = ['processing', 'succeeded', 'failed', 'partially_refunded', 'refunded'] as const;
export type PaymentStatus = (typeof PAYMENT_STATUSES)[number];
export const SPLIT_STATUSES = ['pending', 'completed', 'reversed', 'canceled'] as const;
export type SplitStatus = (typeof SPLIT_STATUSES)[number];
export const PAYMENT_FUNDINGS = ['card', 'platform_balance'] as const;
export type PaymentFunding = (typeof PAYMENT_FUNDINGS)[number];

/** A charge of a card through a gateway. Only brand, last4, expiry and the gateway token are kept. */
export const Payment = defineEntity({
  name: 'Payment',
  tableName: 'payments',
  filters: scopeFilter,
  properties: {
    ...scopedColumns(),
    kind: p.enum(['charge', 'marketplace_split'] as const),
    status: p.enum(PAYMENT_STATUSES),
    amount: p.bigint('number'),
    amountRefunded: p.bigint('number').default(0),
    currency: p.string(),
    customerId: p.string().nullable(),
    description: p.text().nullable(),
    fraudProtection: p.boolean(),
    gateway: p.string(),
    gatewayReference: p.string().nullable(),
    /** The gateway's charge behind it when that is not gatewayReference (Stripe: the PaymentIntent's `ch_…`). */
    gatewayChargeReference: p.string().nullable(),
    /** What paid for it: a card charge, or (marketplace splits only) the platform's gateway balance. */
    funding: p.enum(PAYMENT_FUNDINGS).default('card'),
    /** Card columns: null for a payment funded by the platform balance. */
    /** How the gateway was chosen (domain/payments/routing.ts); null for payments made before routing existed. */
    routing: p.json<PaymentRouting>().nullable(),
    cardBrand: p.string().nullable(),
    cardLast4: p.string().nullable(),
    cardExpMonth: p.smallint().nullable(),
    cardExpYear: p.smallint().nullable(),
    cardToken: p.string().nullable(),
    /** The balance the gateway reported when it refused a balance-funded split (minor units). */
    balanceAvailable: p.bigint('number').nullable(),
    riskScore: p.integer().nullable(),
    fees: p.bigint('number').nullable(),
    settlementExpectedDate: p.string().columnType('date').nullable(),
    failureCode: p.string().nullable(),
    declineCode: p.string().nullable(),
    failureMessage: p.text().nullable(),
    platformFee: p.bigint('number').nullable(),
    roundingRemainder: p.bigint('number').nullable(),
    splitStatus: p.enum(SPLIT_STATUSES).nullable(),
    workflowId: p.string(),
    requestIdempotencyKey: p.string().nullable(),
    requestId: p.string().nullable(),
    metadata: p.json<Record<string, string>>(),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p.datetime().onCreate(() => new Date()),
  },
});
export type Payment = InferEntity<typeof Payment>;

export const REFUND_STATUSES = ['pending', 'succeeded', 'failed'] as const;
export type RefundStatus = (typeof REFUND_STATUSES)[number];

export const PaymentRefund = defineEntity({
  name: 'PaymentRefund',
  tableName: 'payment_refunds',
  filters: scopeFilter,
  properties: {
    ...scopedColumns(),
    paymentId: p.string(),
    amount: p.bigint('number'),
    currency: p.string(),
    status: p.enum(REFUND_STATUSES),
    reason: p.string().nullable(),
    gatewayReference: p.string().nullable(),
    failureMessage: p.text().nullable(),
    workflowId: p.string().nullable(),
    requestIdempotencyKey: p.string().nullable(),
    metadata: p.json<Record<string, string>>(),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p.datetime().onCreate(() => new Date()),
  },
});
export type PaymentRefund = InferEntity<typeof PaymentRefund>;

export const TRANSFER_STATUSES = ['pending', 'paid', 'failed', 'reversed', 'canceled'] as const;
export type TransferStatus = (typeof TRANSFER_STATUSES)[number];

export const PaymentTransfer = defineEntity({
  name: 'PaymentTransfer',
  tableName: 'payment_transfers',
  filters: scopeFilter,
  properties: {
    ...scopedColumns(),
    paymentId: p.string(),
    position: p.smallint(),
    destination: p.string(),
    amount: p.bigint('number'),
    currency: p.string(),
    status: p.enum(TRANSFER_STATUSES),
    gatewayReference: p.string().nullable(),
    failureCode: p.string().nullable(),
    failureMessage: p.text().nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p.datetime().onCreate(() => new Date()),
  },
});
export type PaymentTransfer = InferEntity<typeof PaymentTransfer>;

/** An account's live-mode gateway choice (test mode always uses the sandbox). */
export const PaymentGatewaySetting = defineEntity({
  name: 'PaymentGatewaySetting',
  tableName: 'payment_gateway_settings',
  properties: {
    accountId: p.string().primary(),
    liveGateway: p.enum(['sandbox', 'stripe', 'adyen', 'paypal'] as const),
    updatedAt: p.datetime().onCreate(() => new Date()),
  },
});
export type PaymentGatewaySetting = InferEntity<typeof PaymentGatewaySetting>;

/** A routing rule of an account and mode (domain/payments/routing.ts). */
export const PaymentRoutingRule = defineEntity({
  name: 'PaymentRoutingRule',
  tableName: 'payment_routing_rules',
  filters: scopeFilter,
  properties: {
    ...scopedColumns(),
    name: p.text(),
    priority: p.integer(),
    conditions: p.json<RoutingConditions>(),
    gateways: p.array().$type<string[]>(),
    enabled: p.boolean(),
    createdAt: p.datetime(),
    updatedAt: p.datetime(),
  },
});
export type PaymentRoutingRule = InferEntity<typeof PaymentRoutingRule>;
