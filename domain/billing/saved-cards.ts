import type { EntityManager } from '@mikro-orm/postgresql';
import type { CardOnFile, GatewayName, SavedCards } from '../payments/public.ts';
import { Subscription } from './entities.ts';

/**
 * Customers' default saved cards, for payments (a marketplace split without a payment_method): the
 * card on file of the customer's most recently changed subscription that is not canceled and has
 * one, in the em's account and mode, with the gateway that tokenised it (its token is valid there
 * only). Only the gateway token, brand, last4 and expiry are kept (no fingerprint on the row; the
 * gateway knows its own token's).
 */
export const subscriptionSavedCards: SavedCards = {
  async defaultCard(em: EntityManager, customerId: string) {
    const sub = await em.findOne(
      Subscription,
      { customerId, status: { $ne: 'canceled' }, cardToken: { $ne: null } },
      { orderBy: { updatedAt: 'desc', id: 'desc' } },
    );
    if (!sub?.cardToken || !sub.cardBrand || !sub.cardLast4 || sub.cardExpMonth == null || sub.cardExpYear == null) return null;
    const card: CardOnFile = { token: sub.cardToken, brand: sub.cardBrand as CardOnFile['brand'], last4: sub.cardLast4, expMonth: sub.cardExpMonth, expYear: sub.cardExpYear, fingerprint: '' };
    return { card, gateway: (sub.cardGateway as GatewayName | null | undefined) ?? null };
  },
};
