import { mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { TestPlatform } from '../support/platform.ts';
import { usePlatform, type Http } from '../support/use-platform.ts';
import { workerProcesses } from '../support/worker-processes.ts';
import { Fixtures } from './support.ts';

/** A worker killed in the middle of a render: the report restarts on another worker and ends with one file. */

const dir = mkdtempSync(join(tmpdir(), 'bp-reports-crash-'));
let platform: TestPlatform;
let http: Http;
let key: string;
let accountId: string;
const workers = workerProcesses(() => platform, { WORKER_AREAS: 'analytics', ANALYTICS_REPORTS_DIR: dir });

// No in-process worker: the workers are child processes this file can kill.
usePlatform({ ownAccount: true, env: { ANALYTICS_REPORTS_DIR: dir, RATE_LIMIT_PER_MINUTE: '10000' } }, (t) => ({ platform, http, key, accountId } = t));
afterAll(() => workers.killAll());

describe('a worker killed mid-report', () => {
  it('renders again on another worker into a fresh part file: one file, one report.ready', async () => {
    const fx = new Fixtures(platform, accountId);
    const customer = await fx.customer();
    const store = await fx.store();
    for (let d = 1; d <= 12; d++) await fx.order(store, customer, 1000 + d, 'USD', `2025-03-${String(d).padStart(2, '0')}T12:00:00Z`);

    const first = await workers.start();
    const replacement = workers.standby();
    const res = await http('/v3/analytics/reports/generate', {
      key, body: { report_type: 'sales', format: 'csv', date_range: { start: '2025-03-01', end: '2025-03-31' }, filters: { sandbox_scenario: 'hold_at_half' } },
    });
    expect(res.status, res.text).toBe(202);
    const id = res.body.id as string;
    const files = () => readdirSync(join(dir, accountId)).filter((n) => n.startsWith(id)).sort();

    // Held at half way with its first part file written: now the worker dies.
    const deadline = Date.now() + 20_000;
    while ((await http(`/v3/analytics/reports/${id}`, { key })).body.progress !== 50) {
      if (Date.now() > deadline) throw new Error('the render never reached half way');
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(files()).toEqual([`${id}.1.part`]);
    await workers.kill(first);
    await replacement.start();

    const end = Date.now() + 45_000;
    let report: any;
    while ((report = (await http(`/v3/analytics/reports/${id}`, { key })).body).status !== 'succeeded') {
      if (Date.now() > end) throw new Error(`the report did not finish: ${JSON.stringify(report)}`);
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(report).toMatchObject({ row_count: 12, file: { name: `${id}.csv` } });
    expect(files()).toEqual([`${id}.csv`]);
    const events = await platform.sql<{ type: string }>(`select type from events where data->'object'->>'id' = $1`, [id]);
    expect(events.map((e) => e.type)).toEqual(['report.ready']);
    const history = await platform.temporal.client.workflow.getHandle(`report-${id}`).fetchHistory();
    const attempts = (history.events ?? []).filter((e) => e.activityTaskStartedEventAttributes).map((e) => Number(e.activityTaskStartedEventAttributes!.attempt));
    expect(Math.max(...attempts)).toBeGreaterThanOrEqual(2);
  });
});
