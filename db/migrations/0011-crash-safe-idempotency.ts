import { Migration } from '@mikro-orm/migrations';

/**
 * Crash-safe idempotency: a claim records the API instance that owns it (`owner`; the instance
 * holds a session advisory lock while it lives, so a claim whose owner died is taken over at once)
 * and the id of the resource the request creates (`resource_id`, chosen once per key and reused by
 * every retry, so a retry reaches the same workflow and row). A claim released after a 5xx that had
 * chosen an id is kept as `released` (the id must survive the release).
 */
export class Migration0011CrashSafeIdempotency extends Migration {
  override name = '0011-crash-safe-idempotency';

  override up(): void {
    this.addSql(`alter table idempotency_records add column owner text null, add column resource_id text null`);
    this.addSql(`alter table idempotency_records drop constraint if exists idempotency_records_state_check`);
    this.addSql(`alter table idempotency_records add constraint idempotency_records_state_check check (state in ('in_progress', 'completed', 'released'))`);
  }

  override down(): void {
    this.addSql(`delete from idempotency_records where state = 'released'`);
    this.addSql(`alter table idempotency_records drop constraint if exists idempotency_records_state_check`);
    this.addSql(`alter table idempotency_records add constraint idempotency_records_state_check check (state in ('in_progress', 'completed'))`);
    this.addSql(`alter table idempotency_records drop column owner, drop column resource_id`);
  }
}
