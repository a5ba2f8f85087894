import { describe, expect, it } from 'vitest';
import type { TestPlatform } from '../support/platform.ts';
import { usePlatform, type Http } from '../support/use-platform.ts';

type Line = Record<string, any>;

/** Log lines in memory; `next(match)` resolves with the first line (already written or to come) that matches. */
function logSink() {
  const lines: Line[] = [];
  const waiting: { match: (l: Line) => boolean; resolve: (l: Line) => void }[] = [];
  const write = (raw: string) => {
    const line = JSON.parse(raw) as Line;
    lines.push(line);
    for (const w of [...waiting]) {
      if (w.match(line)) {
        waiting.splice(waiting.indexOf(w), 1);
        w.resolve(line);
      }
    }
  };
  return {
    destinations: { out: { write }, err: { write } },
    next(match: (l: Line) => boolean): Promise<Line> {
      const found = lines.find(match);
      return found ? Promise.resolve(found) : new Promise((resolve) => waiting.push({ match, resolve }));
    },
  };
}

const log = logSink();
let platform: TestPlatform;
let http: Http;
let accountId: string;
let key: string;

usePlatform({ worker: true, ownAccount: true, env: { LOG_LEVEL: 'debug', EVENT_DISPATCH_SWEEP_MS: '500' }, log: log.destinations }, (t) => ({ platform, http, accountId, key } = t));

describe('log context in the running platform', () => {
  it('gives the access log line of an admitted request its request id, account and mode', async () => {
    const res = await http('/v3/customers', { key, body: { email: 'logged@example.com', name: 'Logged' } });
    expect(res.status).toBe(201);
    const requestId = res.headers.get('request-id')!;
    const line = await log.next((l) => l.msg === 'request' && l.request_id === requestId);
    expect(line).toMatchObject({ level: 'info', request_id: requestId, account_id: accountId, mode: 'test', method: 'POST', path: '/v3/customers', status: 201 });
  });

  it('gives a refused request its request id and no account', async () => {
    const res = await http('/v3/customers', { key: 'bp_test_' + 'x'.repeat(40) });
    expect(res.status).toBe(401);
    const requestId = res.headers.get('request-id')!;
    const line = await log.next((l) => l.msg === 'request' && l.request_id === requestId);
    expect(line).toMatchObject({ status: 401 });
    expect(line).not.toHaveProperty('account_id');
  });

  it('gives lines logged inside an activity the workflow id, workflow type and activity type', async () => {
    // The dispatcher workflow's sweep (an activity, every EVENT_DISPATCH_SWEEP_MS) logs each run at debug.
    const line = await log.next((l) => l.msg === 'outbox swept');
    expect(line).toMatchObject({
      workflow_id: expect.stringContaining(platform.taskQueuePrefix), workflow_type: 'eventDispatcherWorkflow', activity_type: 'dispatchPendingEvents',
    });
    expect(line).not.toHaveProperty('request_id');
  });
});
