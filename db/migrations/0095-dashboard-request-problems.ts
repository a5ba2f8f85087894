import { Migration } from '@mikro-orm/migrations';

/**
 * The dashboard's request log shows each failed request's problem document, so the log keeps it
 * (JSON, as answered; successful requests keep null). The log is listed per account and mode,
 * newest first.
 */
export class Migration0095DashboardRequestProblems extends Migration {
  override name = '0095-dashboard-request-problems';

  override up(): void {
    this.addSql(`
      alter table request_logs add column problem jsonb null;
      create index request_logs_account_time on request_logs (account_id, livemode, created_at desc);
    `);
  }

  override down(): void {
    this.addSql(`
      drop index request_logs_account_time;
      alter table request_logs drop column problem;
    `);
  }
}
