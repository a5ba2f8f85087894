import { Migration } from '@mikro-orm/migrations';

/**
 * GET /v3/communications/calls?to_number=… lists the calls to one number newest first, from an index
 * that leads with it, instead of walking the account's calls until enough match (docs/platform.md,
 * "Lists"). `from_number` is left to the scope index: it is one of the account's few own numbers,
 * so its calls are a large share of the account's. `if not exists`: see migration 0162.
 */
export class Migration0165CallsByNumber extends Migration {
  override name = '0165-calls-by-number';

  override up(): void {
    this.addSql('create index if not exists comm_calls_scope_to on comm_calls (account_id, livemode, to_number, id desc);');
  }

  override down(): void {
    this.addSql('drop index if exists comm_calls_scope_to;');
  }
}
