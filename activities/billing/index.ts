import type { MikroORM } from '@mikro-orm/postgresql';
import {
  createPeriodInvoice, getSubscription, markUncollectible, prepareCollection, recordCollection, saveSubscription, type CreateInvoiceInput,
} from '../../domain/billing/service.ts';
import { scopedEm, type Scope } from '../../domain/scope.ts';
import type { InvoiceView, SubscriptionSnapshot, SubscriptionView } from '../../workflows/billing/shared.ts';

export interface BillingActivityDeps {
  orm: MikroORM;
}

const scopeOf = (r: { accountId: string; livemode: boolean }): Scope => ({ accountId: r.accountId, livemode: r.livemode });

/**
 * The subscription workflow's steps. Each is idempotent under retry: the row write is guarded by a
 * version, an invoice is unique per period, a collection attempt keeps its payment id.
 */
export function createBillingActivities({ orm }: BillingActivityDeps) {
  return {
    async saveSubscription(snap: SubscriptionSnapshot): Promise<SubscriptionView> {
      return saveSubscription(scopedEm(orm, scopeOf(snap)), snap);
    },
    async getSubscriptionView(input: { accountId: string; livemode: boolean; subscriptionId: string }): Promise<SubscriptionView> {
      return getSubscription(scopedEm(orm, scopeOf(input)), input.subscriptionId);
    },
    async createInvoice(input: CreateInvoiceInput): Promise<InvoiceView> {
      return createPeriodInvoice(scopedEm(orm, scopeOf(input)), input);
    },
    async prepareCollection(input: { accountId: string; livemode: boolean; invoiceId: string }) {
      return prepareCollection(scopedEm(orm, scopeOf(input)), input.invoiceId);
    },
    async recordCollection(input: {
      accountId: string; livemode: boolean; invoiceId: string; attempt: number; paymentId: string;
      outcome: 'succeeded' | 'failed'; failureCode: string | null; at: number;
    }): Promise<{ paid: boolean }> {
      return recordCollection(scopedEm(orm, scopeOf(input)), input);
    },
    async markUncollectible(input: { accountId: string; livemode: boolean; invoiceIds: string[] }): Promise<void> {
      await markUncollectible(scopedEm(orm, scopeOf(input)), input.invoiceIds);
    },
  };
}

export type BillingActivities = ReturnType<typeof createBillingActivities>;
