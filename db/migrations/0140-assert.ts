import { Migration } from '@mikro-orm/migrations';

/**
 * `bp_assert(ok, code)`: true, or an error (SQLSTATE P0001, the message `code`) that aborts the
 * transaction. For statements that run together in one round trip (db/pool.ts `inOneTransaction`):
 * a condition one of them finds false (an order's planned stock taken meanwhile) rolls back all
 * of them, and the client recognises the refusal by its code.
 */
export class Migration0140Assert extends Migration {
  override name = '0140-assert';

  override up(): void {
    this.addSql(`
      create function bp_assert(ok boolean, code text) returns boolean language plpgsql as $fn$
      begin
        if ok is not true then
          raise exception using errcode = 'P0001', message = code;
        end if;
        return true;
      end
      $fn$;
    `);
  }

  override down(): void {
    this.addSql('drop function bp_assert(boolean, text);');
  }
}
