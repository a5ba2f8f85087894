import { Migration } from '@mikro-orm/migrations';

/**
 * GET /v3/marketplace/{marketplace}/listings?sku=… walked the marketplace's listings of the account
 * newest first until it found the SKU's (a store lists its whole catalogue). This index answers
 * it with the SKU's listings. `if not exists`: see migration 0162.
 */
export class Migration0169CommerceListingsBySku extends Migration {
  override name = '0169-commerce-listings-by-sku';

  override up(): void {
    this.addSql('create index if not exists marketplace_listings_scope_sku on marketplace_listings (account_id, livemode, marketplace, sku, id desc);');
  }

  override down(): void {
    this.addSql('drop index if exists marketplace_listings_scope_sku;');
  }
}
