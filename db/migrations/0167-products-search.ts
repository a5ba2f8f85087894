import { Migration } from '@mikro-orm/migrations';

/**
 * GET /v3/catalog/products?q=… and GET /v3/stores/{id}/products?q=… match their text anywhere in a
 * product's name, SKU or description (domain/search.ts spells the same expression), which no
 * b-tree serves: every search read every product of the account (or the store). The same trigram
 * index as the customers' (migration 0166) on that text answers it from the index. Where pg_trgm is
 * missing (0166 says so in a notice), the index is left out and search reads the table as before.
 */
export class Migration0167ProductsSearch extends Migration {
  override name = '0167-products-search';

  override up(): void {
    this.addSql(`
      do $$
      begin
        if exists (select 1 from pg_extension where extname = 'pg_trgm') then
          create index if not exists products_search on products using gin ((
            coalesce(name, '') || E'\\x1f' || coalesce(sku, '') || E'\\x1f' || coalesce(description, '')
          ) gin_trgm_ops);
        end if;
      end $$;
    `);
  }

  override down(): void {
    this.addSql('drop index if exists products_search;');
  }
}
