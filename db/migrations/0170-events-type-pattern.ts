import { Migration } from '@mikro-orm/migrations';

/**
 * GET /v3/events?type=order.* matches a prefix (`type like 'order.%'`). PostgreSQL serves LIKE from
 * a b-tree only when the index compares bytes: under the plain C collation `events_scope_type`
 * would have, but not under C.UTF-8 (the embedded PostgreSQL's, and this machine's) nor a
 * language collation (the official Docker image's en_US.utf8, most managed databases). So the read
 * walked the account's events newest first until it found the page: 46 ms (C.UTF-8) and 54 ms
 * (ICU en-US) against 0.2 ms for 200,000 events and a rare kind (2026-11-29). The same columns
 * with `text_pattern_ops` serve the prefix in every collation, and the exact kinds (`=`, `in`) as
 * before, so this index replaces the old one. `if not exists`: see migration 0162.
 */
export class Migration0170EventsTypePattern extends Migration {
  override name = '0170-events-type-pattern';

  override up(): void {
    this.addSql(`
      create index if not exists events_scope_type_pattern on events (account_id, livemode, type text_pattern_ops, id desc);
      drop index if exists events_scope_type;
    `);
  }

  override down(): void {
    this.addSql(`
      create index if not exists events_scope_type on events (account_id, livemode, type, id desc);
      drop index if exists events_scope_type_pattern;
    `);
  }
}
