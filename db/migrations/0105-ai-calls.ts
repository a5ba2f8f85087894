import { Migration } from '@mikro-orm/migrations';

/**
 * /v3/ai: one row per model call (domain/ai/usage.ts) — which key made it, the operation, the
 * model, the tools it called and its tokens in and out. A key's monthly budget is the sum of its
 * rows since the month began (the index serves that sum). No question, answer or customer data
 * is kept here.
 */
export class Migration0105AiCalls extends Migration {
  override name = '0105-ai-calls';

  override up(): void {
    this.addSql(`
      create table ai_calls (
        id text primary key,
        account_id text not null references accounts (id),
        livemode boolean not null,
        key_id text not null,
        operation text not null check (operation in ('ask', 'customer_summary', 'reply_draft')),
        model text not null,
        status text not null check (status in ('succeeded', 'failed')),
        tools text[] not null,
        input_tokens integer not null check (input_tokens >= 0),
        output_tokens integer not null check (output_tokens >= 0),
        duration_ms integer not null,
        created_at timestamptz not null
      );
      create index ai_calls_key_month on ai_calls (key_id, created_at);
      create index ai_calls_scope on ai_calls (account_id, livemode, id);
    `);
  }

  override down(): void {
    this.addSql('drop table if exists ai_calls;');
  }
}
