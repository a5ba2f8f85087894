import { Migration } from '@mikro-orm/migrations';

/**
 * A subscription's card on file keeps the gateway that tokenised it (a card token is valid at that
 * gateway only): payments charges it there, and a marketplace split paid by a customer's saved card
 * knows where it can go. Cards saved before are filled in from their token's shape (the sandbox's
 * `tok_sandbox_…`, Stripe's `pm_…`); the others stay null (unknown).
 */
export class Migration0083BillingCardGateway extends Migration {
  override name = '0083-billing-card-gateway';

  override up(): void {
    this.addSql(`
      alter table subscriptions add column card_gateway text null;
      update subscriptions set card_gateway = case
        when card_token like 'tok\\_sandbox\\_%' then 'sandbox'
        when card_token like 'pm\\_%' then 'stripe'
      end
      where card_token is not null;
    `);
  }

  override down(): void {
    this.addSql('alter table subscriptions drop column if exists card_gateway;');
  }
}
