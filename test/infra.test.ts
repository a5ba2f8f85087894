import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client, Connection } from '@temporalio/client';
import proto from '@temporalio/proto';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { processAlive, startEmbeddedPostgres } from '../platform/embedded-postgres.ts';
import { SEARCH_ATTRIBUTES, startTemporalDevServer } from '../platform/temporal-dev-server.ts';

// temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD
const KEYWORD = 2;

function portFree(port: number): Promise<boolean> {
  return new Promise((done) => {
    const server = createServer();
    server.once('error', () => done(false));
    server.listen(port, '127.0.0.1', () => server.close(() => done(true)));
  });
}

/** Pids whose command line contains every given argument (Linux /proc; empty elsewhere). */
function pidsWithArgs(...args: string[]): number[] {
  if (!existsSync('/proc')) return [];
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((pid) => {
      try {
        const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
        return args.every((arg) => argv.includes(arg));
      } catch {
        return false;
      }
    })
    .map(Number);
}

const { TaskQueueKind, TaskQueueType } = proto.temporal.api.enums.v1;

/**
 * Starts 12 workflows on a task queue nobody polls and answers the backlog of each of its four read
 * partitions (the root, then `/_sys/<queue>/1..3`) once all 12 are counted. The server's default
 * spreads new tasks over four partitions; ours writes them all to the root (DEV_SERVER_DYNAMIC_CONFIG).
 */
async function backlogByPartition(connection: Connection, namespace: string): Promise<number[]> {
  const client = new Client({ connection, namespace });
  const queue = `partitions-${randomUUID()}`;
  for (let i = 0; i < 12; i++) await client.workflow.start('unpolled', { taskQueue: queue, workflowId: `partitions-${randomUUID()}` });
  const names = [queue, ...[1, 2, 3].map((n) => `/_sys/${queue}/${n}`)];
  for (let attempt = 0; ; attempt++) {
    const backlog = await Promise.all(names.map(async (name) => {
      const { taskQueueStatus } = await connection.workflowService.describeTaskQueue({
        namespace, taskQueue: { name, kind: TaskQueueKind.TASK_QUEUE_KIND_NORMAL }, taskQueueType: TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
        includeTaskQueueStatus: true,
      });
      return Number(taskQueueStatus?.backlogCountHint ?? 0);
    }));
    if (backlog.reduce((a, b) => a + b, 0) >= 12 || attempt === 50) return backlog;
    await sleep(100);
  }
}

const work = mkdtempSync(join(tmpdir(), 'bp-infra-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('Temporal dev server', () => {
  // Generous: the first run may have to build the CLI.
  it('starts headless in memory with the search attributes registered, writes new tasks to one partition, and stops', { timeout: 600_000 }, async () => {
    const server = await startTemporalDevServer({ uiPort: null, logFile: join(work, 'temporal.log') });
    const port = server.address.split(':').at(-1) ?? '';
    expect(server.address).toMatch(/^127\.0\.0\.1:\d+$/);
    expect(server.namespace).toBe('default');
    expect(server.uiUrl).toBeNull();
    const pids = pidsWithArgs('start-dev', '--port', port);
    if (existsSync('/proc')) expect(pids).toHaveLength(1);

    try {
      const connection = await Connection.connect({ address: server.address });
      try {
        const { customAttributes } = await connection.operatorService.listSearchAttributes({
          namespace: server.namespace,
        });
        for (const name of Object.keys(SEARCH_ATTRIBUTES)) expect(customAttributes?.[name], name).toBe(KEYWORD);
        expect(await backlogByPartition(connection, server.namespace)).toEqual([12, 0, 0, 0]);
      } finally {
        await connection.close();
      }
    } finally {
      await server.stop();
    }

    for (const pid of pids) expect(processAlive(pid), `temporal pid ${pid}`).toBe(false);
    expect(await portFree(Number(port))).toBe(true);
    await server.stop(); // idempotent
  });
});

describe('embedded PostgreSQL', () => {
  it('runs a query, then stops and removes its non-persistent data', { timeout: 180_000 }, async () => {
    const dataDir = join(work, 'pg');
    const db = await startEmbeddedPostgres({ dataDir, persistent: false });
    const url = new URL(db.url);
    expect(url.hostname).toBe('127.0.0.1');
    expect(url.pathname).toBe('/postgres');
    const postmaster = Number(readFileSync(join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
    expect(processAlive(postmaster)).toBe(true);

    try {
      const client = new pg.Client({ connectionString: db.url });
      await client.connect();
      try {
        const { rows } = await client.query<{ one: number }>('select 1 as one');
        expect(rows).toEqual([{ one: 1 }]);
      } finally {
        await client.end();
      }
    } finally {
      await db.stop();
    }

    expect(processAlive(postmaster)).toBe(false);
    expect(existsSync(dataDir)).toBe(false);
    expect(await portFree(Number(url.port))).toBe(true);
  });
});
