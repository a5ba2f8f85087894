import { Migration } from '@mikro-orm/migrations';

/**
 * A customer's payments: the journey's payments source (domain/crm/journey.ts) counts and lists
 * them for GET /v3/customers/{id}/journey and for the `customer_metrics` the outbox dispatcher
 * computes for every event about a customer. Without an index that leads with the customer, each
 * of those read every payment of the account: 30 ms at 300,000 payments, against 1.7 ms with it
 * (docs/benchmarks.md, "Per-customer reads"). `if not exists`: see migration 0162.
 */
export class Migration0163PaymentsByCustomer extends Migration {
  override name = '0163-payments-by-customer';

  override up(): void {
    this.addSql('create index if not exists payments_scope_customer on payments (account_id, livemode, customer_id, id desc) where customer_id is not null;');
  }

  override down(): void {
    this.addSql('drop index if exists payments_scope_customer;');
  }
}
