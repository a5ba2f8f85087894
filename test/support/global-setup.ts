import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { randomBytes } from 'node:crypto';
import type { TestProject } from 'vitest/node';
import { createOrm, migrate } from '../../db/orm.ts';
import { buildWorkflowBundle } from '../../worker/worker.ts';
import { buildDashboard, dashboardStale } from '../../domain/dashboard/assets.ts';
import { ensureDockerCompose } from '../../platform/docker-compose.ts';
import { startThrowawayInfra, withDatabase } from '../../platform/throwaway-infra.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    adminDbUrl: string;
    templateDb: string;
    temporalAddress: string;
    bundlePath: string;
    /** Each file's database is named `<prefix><random>`: the teardown removes what is left of this run's. */
    testDbPrefix: string;
    /**
     * Whether a file drops its database when it ends. Not on a throwaway server (CI's embedded
     * PostgreSQL, deleted whole at the end): every DROP DATABASE forces a checkpoint, which the
     * file would wait for and every file running beside it would pay for.
     */
    dropTestDbs: boolean;
  }
}

/**
 * Once per run: a PostgreSQL server (TEST_DATABASE_URL, else an embedded one), a migrated
 * template database every test file clones, a real Temporal dev server (TEMPORAL_ADDRESS, else
 * one started here) and the workflow bundle, built once.
 */
interface Infra {
  provided: { adminDbUrl: string; templateDb: string; temporalAddress: string; bundlePath: string; testDbPrefix: string; dropTestDbs: boolean };
  teardown(): Promise<void>;
}

// The projects of vitest.config.ts (files sharing processes, files with a process of their own)
// share one set: the second project's setup waits for the first's, the last teardown stops it.
let shared: { infra: Promise<Infra>; users: number } | undefined;

export default async function setup(project: TestProject) {
  // The processes the tests spawn (CLI, API and worker processes) load the whole application from
  // TypeScript sources; Node's compile cache keeps their compiled code between spawns (half the time).
  process.env.NODE_COMPILE_CACHE ??= fileURLToPath(new URL('../../node_modules/.cache/node-compile', import.meta.url));
  shared ??= { infra: startInfra(), users: 0 };
  shared.users++;
  const infra = await shared.infra;
  project.provide('adminDbUrl', infra.provided.adminDbUrl);
  project.provide('templateDb', infra.provided.templateDb);
  project.provide('temporalAddress', infra.provided.temporalAddress);
  project.provide('bundlePath', infra.provided.bundlePath);
  project.provide('testDbPrefix', infra.provided.testDbPrefix);
  project.provide('dropTestDbs', infra.provided.dropTestDbs);
  return async () => {
    if (--shared!.users === 0) await infra.teardown();
  };
}

async function startInfra(): Promise<Infra> {
  const work = mkdtempSync(join(tmpdir(), 'bp-test-'));
  // The workflow bundle (webpack, in this process) builds while the servers start (other processes).
  const bundlePath = join(work, 'workflow-bundle.js');
  const bundled = buildWorkflowBundle().then(({ code }) => writeFileSync(bundlePath, code));
  bundled.catch(() => undefined); // awaited below; a server failing first must not leave it unhandled
  // Docker Compose for test/platform/deploy.test.ts, built with Go on a machine without one: here,
  // before the tests run, rather than beside them (a Go build takes both cores for minutes).
  // Without Compose and without Go, only that file fails (saying what to install), as stripe-mock's do.
  const compose = ensureDockerCompose((line) => console.error(line))
    .catch((err: unknown) => console.error(`Docker Compose: ${(err as Error).message} (test/platform/deploy.test.ts will fail)`));
  const { adminDbUrl, temporalAddress, stops } = await startThrowawayInfra({
    databaseUrl: process.env.TEST_DATABASE_URL, temporalAddress: process.env.TEMPORAL_ADDRESS, workDir: work,
  });

  const run = `${process.pid}_${randomBytes(3).toString('hex')}`;
  const templateDb = `bp_template_${run}`;
  const testDbPrefix = `bp_t_${run}_`;
  const admin = new pg.Client({ connectionString: adminDbUrl });
  await admin.connect();
  await admin.query(`drop database if exists ${templateDb}`);
  await admin.query(`create database ${templateDb}`);
  const orm = await createOrm({ url: withDatabase(adminDbUrl, templateDb), poolMax: 2, statementTimeoutMs: 0 });
  await migrate(orm);
  await orm.close(true);
  // A server we were given keeps no test databases; a throwaway one is deleted whole.
  const dropTestDbs = Boolean(process.env.TEST_DATABASE_URL);
  stops.push(async () => {
    if (dropTestDbs) {
      // What a given server still holds: databases dropped while their files ended (not awaited by
      // them), or left by a file that failed before its end.
      const { rows } = await admin.query<{ datname: string }>('select datname from pg_database where starts_with(datname, $1)', [testDbPrefix]);
      for (const { datname } of rows) await admin.query(`drop database if exists ${datname} with (force)`);
    }
    await admin.query(`drop database if exists ${templateDb} with (force)`);
    await admin.end();
  });

  // The dashboard's browser tests load the built app; a build takes about a second.
  if (dashboardStale()) await buildDashboard();
  // …and drive Debian's Chromium, installed here when a fresh machine lacks it (as .ci/run does).
  if (!existsSync('/usr/bin/chromium')) {
    execFileSync(fileURLToPath(new URL('../../scripts/ensure-chromium.sh', import.meta.url)), { stdio: 'inherit' });
  }

  await bundled;
  await compose;

  return {
    provided: { adminDbUrl, templateDb, temporalAddress, bundlePath, testDbPrefix, dropTestDbs },
    async teardown() {
      for (const stop of stops.reverse()) await stop().catch((err: unknown) => console.error('teardown:', err));
      rmSync(work, { recursive: true, force: true });
    },
  };
}
