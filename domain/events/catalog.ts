/**
 * Every kind of event the platform records, with an example of its `data.object`. Webhook
 * endpoints subscribe to these names (or `*`); `recordEvent` accepts only these names, so a new
 * kind is added here (with its example) before any code can emit it. docs/events.md is written
 * from the same list.
 */
export interface EventKind {
  type: string;
  /** The area that records it. */
  area: 'billing' | 'commerce' | 'crm' | 'payments' | 'shipping' | 'warehouses' | 'webhooks';
  description: string;
  /** Events about a customer carry `customer_metrics` in their payload. */
  aboutCustomer: boolean;
  /** An example of `data.object` (what POST /v3/webhooks/{id}/test sends without `test_data`). */
  example: Record<string, unknown>;
}

const ts = '2025-03-14T09:30:00.000Z';
const customerExample = {
  id: 'cus_01jpa7m4x0f3qv8r2k6n9t5w1c', object: 'customer', livemode: false, email: 'ada@example.com', name: 'Ada Lovelace',
  first_name: 'Ada', last_name: 'Lovelace', customer_type: 'b2c', company: null, segments: ['vip'], custom_fields: {},
  metadata: {}, created_at: ts, updated_at: ts,
};
const subscriptionExample = (status: string) => ({
  id: 'sub_01jpa7q2c9e1kx5f8h3m6r0t4v', object: 'subscription', livemode: false, customer_id: customerExample.id,
  plan_id: 'plan_01jpa7p0b8d0jw4e7g2l5q9s3u', billing_cycle: 'monthly', status, auto_collection: true, days_until_due: 30,
  trial_end: null, current_period_start: '2025-03-14T09:30:00.000Z', current_period_end: '2025-04-14T09:30:00.000Z',
  next_invoice_date: status === 'canceled' || status === 'paused' ? null : '2025-04-14T09:30:00.000Z', cancel_at_period_end: false,
  canceled_at: status === 'canceled' ? ts : null, paused_at: status === 'paused' ? ts : null, resumes_at: null, tax_jurisdiction: null,
  test_clock: null, payment_method: { type: 'card', card: { brand: 'visa', last4: '4242', exp_month: 12, exp_year: 2030 } },
  workflow_id: 'subscription-sub_01jpa7q2c9e1kx5f8h3m6r0t4v', metadata: {}, created_at: ts, updated_at: ts,
});
const invoiceExample = (status: string) => ({
  id: 'inv_01jpa7s8d2g4hm6q9v1x3z5b7n', object: 'invoice', livemode: false, customer_id: customerExample.id,
  subscription_id: 'sub_01jpa7q2c9e1kx5f8h3m6r0t4v', status, currency: 'USD', subtotal: 4900, tax: 931, amount: 5831,
  amount_due: status === 'paid' ? 0 : 5831, amount_paid: status === 'paid' ? 5831 : 0, due_date: '2025-03-14',
  period_start: '2025-02-14T09:30:00.000Z', period_end: ts,
  line_items: [{
    type: 'subscription', description: 'Pro (monthly)', quantity: '1', unit_amount: '4900', amount: 4900,
    period: { start: '2025-02-14T09:30:00.000Z', end: ts }, tax_amounts: [{ tax_rate_id: 'txr_01jpa7r5c1f3gl5p8u0w2y4a6m', amount: 931 }],
  }],
  taxes: [{ tax_rate_id: 'txr_01jpa7r5c1f3gl5p8u0w2y4a6m', name: 'USt', jurisdiction: 'DE', percentage: '19', taxable_amount: 4900, amount: 931 }],
  payment_method: 'visa **** 4242', auto_collection: true, attempt_count: status === 'open' ? 0 : 1,
  last_payment_id: status === 'open' ? null : 'pay_01jpa7v0f4j6kn8r1w3y5a7c9e', paid_at: status === 'paid' ? ts : null, created_at: ts,
});
const paymentExample = (status: string) => ({
  id: 'pay_01jpa7v0f4j6kn8r1w3y5a7c9e', object: 'payment', livemode: false, status, amount: 4900,
  amount_refunded: status === 'refunded' ? 4900 : 0, currency: 'usd', gateway: 'sandbox', created: ts, created_at: ts, updated_at: ts,
  customer_id: customerExample.id, description: 'Pro plan, March', fraud_protection: true,
  payment_method: { type: 'card', card: { brand: 'visa', last4: '4242', exp_month: 12, exp_year: 2030 } },
  risk_score: 12, settlement: { expected_date: status === 'failed' ? null : '2025-03-16', fees: status === 'failed' ? null : 172 },
  failure: status === 'failed' ? { code: 'card_declined', decline_code: 'insufficient_funds', message: 'The card has insufficient funds.' } : null,
  workflow_id: 'payment-pay_01jpa7v0f4j6kn8r1w3y5a7c9e', metadata: {},
});
const orderExample = (status: string, fulfillment = status === 'fulfilled' ? 'fulfilled' : status === 'canceled' ? 'canceled' : 'pending') => ({
  id: 'ord_01jpa7x6h8m0pr2t4w6y8b0d2f', object: 'order', livemode: false, store_id: 'store_01jpa7z1k3n5qs7u9x1a3c5e7g',
  customer_id: customerExample.id, status, payment_status: 'paid', total_amount: 12900, currency: 'USD',
  line_items: [{
    product_id: 'prod_01jpa7y3k5n7qs9u1w3y5a7c9e', sku: 'MUG-BLUE', name: 'Blue mug', variant: null, quantity: 2, unit_price: 6450, amount: 12900,
    allocations: [{ warehouse_id: 'wh_01jpa81m5p7r9t1v3x5z7b9d1f', quantity: 2 }],
  }],
  shipping_address: { name: 'Ada Lovelace', line1: '12 St James Sq', city: 'London', postal_code: 'SW1Y 4JH', country: 'GB' },
  fulfillment: {
    status: fulfillment, tracking_number: status === 'fulfilled' ? '1Z999AA10123456784' : null, carrier: status === 'fulfilled' ? 'ups' : null,
    deadline: '2025-03-16T09:30:00.000Z', fulfilled_at: status === 'fulfilled' ? '2025-03-15T10:00:00.000Z' : null,
  },
  workflow_id: 'order-ord_01jpa7x6h8m0pr2t4w6y8b0d2f', canceled_at: null, cancellation_reason: null,
  paid_at: ts, payment_id: null, metadata: {}, created_at: ts, updated_at: ts,
});

const endpointExample = (state: Record<string, unknown>) => ({
  id: 'whk_01jpa83q7s9v1x3z5b7d9f1h3k', object: 'webhook_endpoint', livemode: false, url: 'https://example.com/hooks',
  description: null, events: ['*'], ...state, previous_secret_expires_at: null, metadata: {}, created_at: ts, updated_at: ts,
});

export const EVENT_CATALOG = [
  {
    type: 'customer.updated', area: 'crm', aboutCustomer: true,
    description: 'A customer was updated; `data.previous_attributes` holds the previous values of what changed.',
    example: customerExample,
  },
  {
    type: 'subscription.created', area: 'billing', aboutCustomer: true,
    description: 'A subscription was created (its trial or first billing period has started).',
    example: subscriptionExample('active'),
  },
  {
    type: 'subscription.paused', area: 'billing', aboutCustomer: true,
    description: 'A subscription was paused; no invoices are issued until it resumes.',
    example: subscriptionExample('paused'),
  },
  {
    type: 'subscription.resumed', area: 'billing', aboutCustomer: true,
    description: 'A paused subscription was resumed.',
    example: subscriptionExample('active'),
  },
  {
    type: 'subscription.canceled', area: 'billing', aboutCustomer: true,
    description: 'A subscription was canceled (at once or at the end of its period).',
    example: subscriptionExample('canceled'),
  },
  {
    type: 'invoice.created', area: 'billing', aboutCustomer: true,
    description: 'An invoice was issued.',
    example: invoiceExample('open'),
  },
  {
    type: 'invoice.paid', area: 'billing', aboutCustomer: true,
    description: 'An invoice was paid in full.',
    example: invoiceExample('paid'),
  },
  {
    type: 'invoice.payment_failed', area: 'billing', aboutCustomer: true,
    description: 'Collecting an invoice failed; it will be retried per the dunning schedule.',
    example: invoiceExample('open'),
  },
  {
    type: 'payment.succeeded', area: 'payments', aboutCustomer: true,
    description: 'A payment succeeded.',
    example: paymentExample('succeeded'),
  },
  {
    type: 'payment.failed', area: 'payments', aboutCustomer: true,
    description: 'A payment failed (declined, blocked by risk checks or errored at the gateway).',
    example: paymentExample('failed'),
  },
  {
    type: 'payment.refunded', area: 'payments', aboutCustomer: true,
    description: 'A payment was refunded, in full or in part (`amount_refunded`).',
    example: paymentExample('refunded'),
  },
  {
    type: 'order.created', area: 'commerce', aboutCustomer: true,
    description: 'An order was placed.',
    example: orderExample('processing'),
  },
  {
    type: 'order.fulfilled', area: 'commerce', aboutCustomer: true,
    description: 'Every item of an order was fulfilled.',
    example: orderExample('fulfilled'),
  },
  {
    type: 'order.fulfillment.delayed', area: 'commerce', aboutCustomer: true,
    description: 'Fulfilment of an order is late against its deadline (logistics tracking).',
    example: orderExample('processing', 'delayed'),
  },
  {
    type: 'order.canceled', area: 'commerce', aboutCustomer: true,
    description: 'An order was canceled before fulfilment; its reserved stock was released.',
    example: { ...orderExample('canceled'), canceled_at: ts, cancellation_reason: 'customer request' },
  },
  {
    type: 'order.updated', area: 'commerce', aboutCustomer: true,
    description: 'An order changed (metadata, shipping address, payment status); `data.previous_attributes` holds the previous values of what changed.',
    example: orderExample('processing'),
  },
  {
    type: 'inventory.low_stock', area: 'warehouses', aboutCustomer: false,
    description: 'Available stock of a SKU in a warehouse fell to or below its reorder point.',
    example: {
      object: 'inventory_level', livemode: false, warehouse_id: 'wh_01jpa81m5p7r9t1v3x5z7b9d1f', sku: 'MUG-BLUE',
      quantity: 4, reserved: 1, available: 3, reorder_point: 5, safety_stock: 2, location: 'A-03-2', last_updated: ts,
    },
  },
  {
    type: 'webhook_endpoint.failing', area: 'webhooks', aboutCustomer: false,
    description: 'An endpoint failed every attempt of a delivery for the whole retry window; it stays enabled and is marked failing until a delivery succeeds.',
    example: endpointExample({ enabled: true, status: 'failing', disabled_reason: null, failing_since: ts }),
  },
  {
    type: 'webhook_endpoint.disabled', area: 'webhooks', aboutCustomer: false,
    description: 'An endpoint was disabled because its receiver answered 410 Gone.',
    example: endpointExample({ enabled: false, status: 'disabled', disabled_reason: 'gone', failing_since: null }),
  },
] as const satisfies readonly EventKind[];

export type EventType = (typeof EVENT_CATALOG)[number]['type'];

/** Subscribing to `*` receives every kind, including kinds added later. */
export const ALL_EVENTS = '*';

const BY_TYPE: ReadonlyMap<string, EventKind> = new Map(EVENT_CATALOG.map((k) => [k.type, k]));

export function eventKind(type: string): EventKind | undefined {
  return BY_TYPE.get(type);
}

export function isEventType(type: string): type is EventType {
  return BY_TYPE.has(type);
}

export const EVENT_TYPES: readonly EventType[] = EVENT_CATALOG.map((k) => k.type);
