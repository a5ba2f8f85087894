import type { EntityManager } from '@mikro-orm/postgresql';
import { searchAttributes } from '../../platform/temporal-kit.ts';
import { REWARDS_AREA, loyaltyEventWorkflowId, type OrderEventInput } from '../../workflows/rewards/shared.ts';
import type { EventConsumer, OutboxEvent, WorkflowStartRequest } from '../events/consumers.ts';
import { LoyaltyGrant } from './entities.ts';

interface OrderObject {
  id: string;
  customer_id: string;
  payment_status: string;
  total_amount: number;
  currency: string;
  payment_id: string | null;
}

interface PaymentObject {
  id: string;
  customer_id: string | null;
  amount: number;
  amount_refunded: number;
  currency: string;
}

/** The reason of the grant a paid order earns (one per order: a second event for it answers the first). */
export const ORDER_EARN_REASON = 'order_paid';

function plannedInput(event: OutboxEvent, fields: Omit<OrderEventInput, 'eventId' | 'accountId' | 'livemode' | 'requestId'>): WorkflowStartRequest {
  const input: OrderEventInput = { eventId: event.id, accountId: event.accountId, livemode: event.livemode, requestId: event.requestId, ...fields };
  return {
    workflowType: 'loyaltyOrderEventWorkflow',
    workflowId: loyaltyEventWorkflowId(event.id),
    area: REWARDS_AREA,
    args: [input],
    searchAttributes: searchAttributes({
      accountId: event.accountId, livemode: event.livemode, customerId: fields.customerId, resourceId: fields.orderId ?? fields.paymentId ?? event.id,
    }),
  };
}

/** Grants of this scope that an order or a payment earned (an earlier earn to reverse). */
async function earned(em: EntityManager, where: { orderId: string } | { paymentId: string }): Promise<{ customerId: string; orderId: string | null } | null> {
  const grant = await em.findOne(LoyaltyGrant, where, { fields: ['customerId', 'orderId'] });
  return grant ? { customerId: grant.customerId, orderId: grant.orderId ?? null } : null;
}

/**
 * The rewards consumer of the outbox: a paid order (`order.created` paid, or `order.updated` whose
 * payment_status became paid) earns points; `order.canceled` and `payment.refunded` reverse what
 * the order earned. One workflow per event (`loyalty-event-evt_…`), so an event dispatched twice
 * changes nothing twice; the ledger keys the earn by order and the reversal by the cumulative
 * refunded share, so two events about the same order cannot double either.
 */
export const rewardsOrderConsumer: EventConsumer = {
  name: 'rewards',
  async plan(event, em) {
    if (event.type === 'order.created' || event.type === 'order.updated') {
      const order = event.data.object as OrderObject;
      const previous = event.data.previous_attributes as { payment_status?: string } | undefined;
      const becamePaid = order.payment_status === 'paid' && (event.type === 'order.created' || (previous?.payment_status !== undefined && previous.payment_status !== 'paid'));
      if (!becamePaid || !order.customer_id) return [];
      return [plannedInput(event, {
        customerId: order.customer_id, action: 'earn', orderId: order.id, paymentId: order.payment_id, amount: order.total_amount,
        currency: order.currency, amountRefunded: null, reason: ORDER_EARN_REASON,
      })];
    }
    if (event.type === 'order.canceled') {
      const order = event.data.object as OrderObject;
      const grant = await earned(em, { orderId: order.id });
      if (!grant) return [];
      return [plannedInput(event, {
        customerId: grant.customerId, action: 'reverse', orderId: order.id, paymentId: null, amount: order.total_amount, currency: order.currency,
        amountRefunded: null, reason: 'order_canceled',
      })];
    }
    if (event.type === 'payment.refunded') {
      const payment = event.data.object as PaymentObject;
      const grant = await earned(em, { paymentId: payment.id });
      if (!grant) return [];
      return [plannedInput(event, {
        customerId: grant.customerId, action: 'reverse', orderId: null, paymentId: payment.id, amount: payment.amount, currency: payment.currency,
        amountRefunded: payment.amount_refunded, reason: 'payment_refunded',
      })];
    }
    return [];
  },
};
