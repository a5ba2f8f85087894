import { Migration } from '@mikro-orm/migrations';

/**
 * The sign-in throttle without window boundaries (domain/identity/throttle.ts). Each bucket keeps a
 * theoretical arrival time (`tat`, the generic cell rate algorithm) instead of a count in a fixed
 * 15-minute window, which let a guesser make twice the allowance across a window's end (and made a
 * test that crossed one fail). `failures` stays: the attempts counted since the bucket was last empty.
 *
 * The counts of the window in force carry over, each failure as one emission interval from now
 * (this release's defaults: 15 minutes / 5 per email, 15 minutes / 50 per address); rows of past
 * windows had expired and go.
 */
export class Migration0150LoginThrottleGcra extends Migration {
  override name = '0150-login-throttle-gcra';

  override up(): void {
    this.addSql(`
      alter table login_throttle add column tat timestamptz;
      update login_throttle
         set tat = now() + failures * case when bucket like 'ip:%' then interval '18 seconds' else interval '180 seconds' end
       where window_start > now() - interval '15 minutes';
      delete from login_throttle where tat is null;
      alter table login_throttle alter column tat set not null, drop column window_start;
    `);
  }

  override down(): void {
    this.addSql(`
      alter table login_throttle add column window_start timestamptz;
      update login_throttle set window_start = now();
      alter table login_throttle alter column window_start set not null, drop column tat;
    `);
  }
}
