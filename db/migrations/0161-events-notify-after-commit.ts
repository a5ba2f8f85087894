import { Migration } from '@mikro-orm/migrations';

/**
 * The outbox's trigger NOTIFYs `bp_events` at commit unless the writer said it NOTIFYs after its
 * commit itself (`bp.notify = after_commit`, db/pool.ts `notifyAfterCommit`). PostgreSQL serializes
 * every NOTIFYing commit of the cluster on one lock, held through the commit's WAL flush: with
 * orders written at hundreds a second, their commits queued on it. A NOTIFY on its own writes
 * nothing and holds the lock for microseconds.
 */
export class Migration0161EventsNotifyAfterCommit extends Migration {
  override name = '0161-events-notify-after-commit';

  override up(): void {
    this.addSql(`
      create or replace function bp_events_notify() returns trigger language plpgsql as $fn$
      begin
        if current_setting('bp.notify', true) is distinct from 'after_commit' then
          perform pg_notify('bp_events', '');
        end if;
        return null;
      end
      $fn$;
    `);
  }

  override down(): void {
    this.addSql(`
      create or replace function bp_events_notify() returns trigger language plpgsql as $fn$
      begin
        perform pg_notify('bp_events', '');
        return null;
      end
      $fn$;
    `);
  }
}
