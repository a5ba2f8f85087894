import { Migration } from '@mikro-orm/migrations';

/**
 * GET /v3/events?customer_id=… reads one customer's events newest first. Without an index that
 * leads with the customer, PostgreSQL walked the account's whole outbox backwards (`events_scope`)
 * to find them, so the answer slowed with the account's size, not the customer's. `if not exists`:
 * on a large table an operator may build it ahead of the deploy with `create index concurrently`
 * under the same name (README.md, "Production").
 */
export class Migration0162EventsByCustomer extends Migration {
  override name = '0162-events-by-customer';

  override up(): void {
    this.addSql('create index if not exists events_scope_customer on events (account_id, livemode, customer_id, id desc) where customer_id is not null;');
  }

  override down(): void {
    this.addSql('drop index if exists events_scope_customer;');
  }
}
