import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { createOrm, migrate } from '../../db/orm.ts';
import { buildWorkflowBundle } from '../../worker/worker.ts';
import { startThrowawayInfra, withDatabase } from '../../platform/throwaway-infra.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    adminDbUrl: string;
    templateDb: string;
    temporalAddress: string;
    bundlePath: string;
  }
}

/**
 * Once per run: a PostgreSQL server (TEST_DATABASE_URL, else an embedded one), a migrated
 * template database every test file clones, a real Temporal dev server (TEMPORAL_ADDRESS, else
 * one started here) and the workflow bundle, built once.
 */
export default async function setup(project: TestProject) {
  const work = mkdtempSync(join(tmpdir(), 'bp-test-'));
  const { adminDbUrl, temporalAddress, stops } = await startThrowawayInfra({
    databaseUrl: process.env.TEST_DATABASE_URL, temporalAddress: process.env.TEMPORAL_ADDRESS, workDir: work,
  });

  const templateDb = `bp_template_${process.pid}`;
  const admin = new pg.Client({ connectionString: adminDbUrl });
  await admin.connect();
  await admin.query(`drop database if exists ${templateDb}`);
  await admin.query(`create database ${templateDb}`);
  const orm = await createOrm({ url: withDatabase(adminDbUrl, templateDb), poolMax: 2, statementTimeoutMs: 0 });
  await migrate(orm);
  await orm.close(true);
  stops.push(async () => {
    await admin.query(`drop database if exists ${templateDb} with (force)`);
    await admin.end();
  });

  const bundlePath = join(work, 'workflow-bundle.js');
  writeFileSync(bundlePath, (await buildWorkflowBundle()).code);

  project.provide('adminDbUrl', adminDbUrl);
  project.provide('templateDb', templateDb);
  project.provide('temporalAddress', temporalAddress);
  project.provide('bundlePath', bundlePath);

  return async () => {
    for (const stop of stops.reverse()) await stop().catch((err: unknown) => console.error('teardown:', err));
    rmSync(work, { recursive: true, force: true });
  };
}
