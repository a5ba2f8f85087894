import { describe, expect, it } from 'vitest';
import { housekeepingWorkflow } from '../../workflows/platform/index.ts';
import { client } from '../support/http.ts';
import type { TestPlatform } from '../support/platform.ts';
import { usePlatform } from '../support/use-platform.ts';

let platform: TestPlatform;

usePlatform({ worker: true }, (t) => ({ platform } = t));

describe('housekeeping workflow', () => {
  it('purges expired idempotency records, old rate-limit windows and old request logs, and nothing else', async () => {
    const key = await platform.newKey();
    const http = client(platform.url);
    await http('/v3/customers', { key, body: { name: 'Keep' }, headers: { 'idempotency-key': 'fresh' } });
    await http('/v3/customers', { key, body: { name: 'Old' }, headers: { 'idempotency-key': 'stale' } });
    await platform.api.deps.requestLog.flush();
    await platform.sql(`update idempotency_records set expires_at = now() - interval '1 hour' where key = 'stale'`);
    await platform.sql(`insert into rate_limit_windows values ('key_x', 'day', now() - interval '3 days', 5)`);
    await platform.sql(`update request_logs set created_at = now() - interval '40 days' where id = (select min(id) from request_logs)`);

    const result = await platform.temporal.client.workflow.execute(housekeepingWorkflow, {
      taskQueue: platform.temporal.taskQueue('platform'),
      workflowId: `housekeeping-test-${Date.now()}`,
      args: [{ requestLogRetentionDays: 30 }],
    });
    expect(result).toEqual({ idempotencyRecords: 1, rateLimitWindows: 1, requestLogs: 1 });
    expect((await platform.sql('select key from idempotency_records')).map((r) => r.key)).toEqual(['fresh']);
    expect(await platform.sql('select 1 from request_logs')).toHaveLength(1);
  });
});
