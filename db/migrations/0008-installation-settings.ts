import { Migration } from '@mikro-orm/migrations';

/**
 * Installation settings: values generated once per installation (database) and shared by every
 * process, such as the card fingerprint key when CARD_FINGERPRINT_KEY is not configured. A value is
 * created with `insert … on conflict do nothing` and then read back, so concurrent processes that
 * start at once all use the one that was inserted first (db/installation-settings.ts).
 */
export class Migration0008InstallationSettings extends Migration {
  override name = '0008-installation-settings';

  override up(): void {
    this.addSql(`
      create table installation_settings (
        name text primary key,
        value text not null,
        created_at timestamptz not null default now()
      );
    `);
  }
}
