import { Migration } from '@mikro-orm/migrations';

/**
 * The ERP lists' filters on one customer, project or vendor (GET /v3/financial/transactions,
 * /v3/projects, /v3/procurement/orders): each reads the matching rows newest first from an index
 * that leads with the filter, instead of walking the account's rows until enough match.
 * `if not exists`: see migration 0162.
 */
export class Migration0164ErpListFilters extends Migration {
  override name = '0164-erp-list-filters';

  override up(): void {
    this.addSql(`
      create index if not exists financial_transactions_scope_customer on financial_transactions (account_id, livemode, customer_id, id desc) where customer_id is not null;
      create index if not exists financial_transactions_scope_project on financial_transactions (account_id, livemode, project_id, id desc) where project_id is not null;
      create index if not exists projects_scope_customer on projects (account_id, livemode, customer_id, id desc) where customer_id is not null;
      create index if not exists procurement_orders_scope_vendor on procurement_orders (account_id, livemode, vendor_id, id desc);
    `);
  }

  override down(): void {
    this.addSql(`
      drop index if exists procurement_orders_scope_vendor;
      drop index if exists projects_scope_customer;
      drop index if exists financial_transactions_scope_project;
      drop index if exists financial_transactions_scope_customer;
    `);
  }
}
