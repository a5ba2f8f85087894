import { Migration } from '@mikro-orm/migrations';

/** A call may connect a PBX extension, which is `busy` while the call is in progress. */
export class Migration0051CommunicationsCallExtension extends Migration {
  override name = '0051-communications-call-extension';

  override up(): void {
    this.addSql('alter table comm_calls add column extension_id text null references comm_pbx_extensions (id) on delete set null');
  }

  override down(): void {
    this.addSql('alter table comm_calls drop column if exists extension_id');
  }
}
