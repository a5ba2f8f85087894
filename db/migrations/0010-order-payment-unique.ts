import { Migration } from '@mikro-orm/migrations';

/**
 * One payment pays one order: `payment_id` is unique per account and mode among orders. Orders
 * that already share a payment (accepted before the check existed) keep theirs on the oldest order;
 * the later ones lose the reference (their `payment_status` is left as it was) so the index can be built.
 */
export class Migration0010OrderPaymentUnique extends Migration {
  override name = '0010-order-payment-unique';

  override up(): void {
    this.addSql(`
      update orders o set payment_id = null
      where o.payment_id is not null and exists (
        select 1 from orders e
        where e.account_id = o.account_id and e.livemode = o.livemode and e.payment_id = o.payment_id
          and (e.created_at, e.id) < (o.created_at, o.id))`);
    this.addSql(`create unique index orders_payment_id_unique on orders (account_id, livemode, payment_id) where payment_id is not null`);
  }

  override down(): void {
    this.addSql('drop index if exists orders_payment_id_unique');
  }
}
