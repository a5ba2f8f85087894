import { Migration } from '@mikro-orm/migrations';

/**
 * GET /v3/customers?q=… matches its text anywhere in a customer's email, names and company name
 * (domain/search.ts spells the same expression). A `%…%` pattern cannot use a b-tree, so every search read every
 * customer of the account. A trigram index (PostgreSQL's pg_trgm, shipped with PostgreSQL and
 * with the embedded one) on the searched text answers it from the index.
 *
 * Where pg_trgm cannot be created (a database user without the right to create extensions, a
 * build without contrib), the migration says so in a notice and leaves the index out: search
 * still answers the same, by reading the table. `if not exists`: see migration 0162.
 */
export class Migration0166CustomersSearch extends Migration {
  override name = '0166-customers-search';

  override up(): void {
    this.addSql(`
      do $$
      begin
        create extension if not exists pg_trgm;
      exception when insufficient_privilege or undefined_file or feature_not_supported then
        raise notice 'pg_trgm could not be created (%): GET /v3/customers?q= reads the table without an index', sqlerrm;
      end $$;
      do $$
      begin
        if exists (select 1 from pg_extension where extname = 'pg_trgm') then
          create index if not exists customers_search on customers using gin ((
            coalesce(email, '') || E'\\x1f' || coalesce(name, '') || E'\\x1f' || coalesce(first_name, '') || E'\\x1f' ||
            coalesce(last_name, '') || E'\\x1f' || coalesce(company ->> 'name', '')
          ) gin_trgm_ops);
        end if;
      end $$;
    `);
  }

  override down(): void {
    this.addSql('drop index if exists customers_search;');
  }
}
