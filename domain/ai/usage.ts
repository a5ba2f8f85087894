import type { EntityManager } from '@mikro-orm/postgresql';
import { ApiError } from '../../platform/errors.ts';
import { newId } from '../../platform/ids.ts';
import type { Logger } from '../../platform/logger.ts';
import type { Scope } from '../scope.ts';
import type { AiUsageView } from './schemas.ts';

export type AiOperation = 'ask' | 'customer_summary' | 'reply_draft';

/** Who is calling: the key's scope and id, whose monthly budget the call counts against. */
export interface AiCaller extends Scope {
  keyId: string;
}

export interface CallRecord {
  operation: AiOperation;
  model: string;
  status: 'succeeded' | 'failed';
  tools: string[];
  inputTokens: number;
  outputTokens: number;
  durationMs: number;
}

/** The calendar month (UTC) `now` is in: budgets reset on the first at 00:00 UTC. */
export function monthOf(now: Date): { start: Date; end: Date } {
  const start = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
  const end = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1));
  return { start, end };
}

/** The key's usage this month, from its recorded calls. */
export async function keyUsage(em: EntityManager, caller: AiCaller, budget: number, now = new Date()): Promise<AiUsageView> {
  const { start, end } = monthOf(now);
  const [row] = await em.execute<{ calls: string; input: string | null; output: string | null }[]>(
    `select count(*) as calls, sum(input_tokens) as input, sum(output_tokens) as output
       from ai_calls where key_id = ? and account_id = ? and livemode = ? and created_at >= ? and created_at < ?`,
    [caller.keyId, caller.accountId, caller.livemode, start, end],
  );
  const input = Number(row?.input ?? 0);
  const output = Number(row?.output ?? 0);
  return {
    object: 'ai_usage', livemode: caller.livemode, period_start: start.toISOString(), period_end: end.toISOString(),
    calls: Number(row?.calls ?? 0), input_tokens: input, output_tokens: output, total_tokens: input + output,
    budget_tokens: budget, remaining_tokens: Math.max(0, budget - input - output),
  };
}

/**
 * 429 `ai_budget_exceeded` once the key has used its month's tokens. Checked before a call, so
 * calls already running may end a little over the budget (their tokens are unknown until they
 * finish); the next call is refused.
 */
export async function checkBudget(em: EntityManager, caller: AiCaller, budget: number, now = new Date()): Promise<void> {
  const usage = await keyUsage(em, caller, budget, now);
  if (usage.remaining_tokens > 0) return;
  const retryAfter = Math.max(1, Math.ceil((Date.parse(usage.period_end) - now.getTime()) / 1000));
  throw new ApiError({
    status: 429, code: 'ai_budget_exceeded', title: 'Too Many Requests',
    detail: `This key used ${usage.total_tokens} of its ${budget} tokens for /v3/ai this month (UTC); the budget resets at ${usage.period_end}.`,
    suggestion: 'Wait for the next month, use another key, or raise AI_MONTHLY_TOKEN_BUDGET. GET /v3/ai/usage shows the usage.',
    headers: { 'Retry-After': String(retryAfter) },
    extensions: { budget_tokens: budget, used_tokens: usage.total_tokens, resets_at: usage.period_end },
  });
}

/**
 * Records one call (its tokens count against the key's budget) and logs it: operation, model,
 * tool names and token counts only — never the question, the answer or any record's content.
 */
export async function recordCall(em: EntityManager, logger: Logger, caller: AiCaller, call: CallRecord): Promise<string> {
  const id = newId('aiCall');
  await em.execute(
    `insert into ai_calls (id, account_id, livemode, key_id, operation, model, status, tools, input_tokens, output_tokens, duration_ms, created_at)
     values (?, ?, ?, ?, ?, ?, ?, ?::text[], ?, ?, ?, now())`,
    [id, caller.accountId, caller.livemode, caller.keyId, call.operation, call.model, call.status, `{${call.tools.map((t) => `"${t}"`).join(',')}}`,
      call.inputTokens, call.outputTokens, Math.round(call.durationMs)],
  );
  logger.info('ai call', {
    ai_call_id: id, key_id: caller.keyId, operation: call.operation, model: call.model, status: call.status,
    tools: call.tools, input_tokens: call.inputTokens, output_tokens: call.outputTokens, duration_ms: Math.round(call.durationMs),
  });
  return id;
}
