import { join } from 'node:path';

/** The same PostgreSQL server URL pointing at another database. */
export function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}

export interface ThrowawayInfra {
  /** A PostgreSQL server URL with the rights to create databases. */
  adminDbUrl: string;
  temporalAddress: string;
  /** Stops what was started here (nothing when both servers were given), in the order they started. */
  stops: (() => Promise<void>)[];
}

/**
 * PostgreSQL and Temporal for a run that keeps nothing (tests, benchmarks): the servers given, else
 * an embedded PostgreSQL (data under `workDir`, not kept) and a Temporal dev server (its log in
 * `workDir`).
 */
export async function startThrowawayInfra(opts: { databaseUrl?: string; temporalAddress?: string; workDir: string }): Promise<ThrowawayInfra> {
  const stops: (() => Promise<void>)[] = [];
  let adminDbUrl = opts.databaseUrl;
  if (!adminDbUrl) {
    const { startEmbeddedPostgres } = await import('./embedded-postgres.ts');
    const local = await startEmbeddedPostgres({ dataDir: join(opts.workDir, 'pg'), persistent: false });
    stops.push(local.stop);
    adminDbUrl = local.url;
  }
  let temporalAddress = opts.temporalAddress;
  if (!temporalAddress) {
    const { startTemporalDevServer } = await import('./temporal-dev-server.ts');
    const server = await startTemporalDevServer({ uiPort: null, logFile: join(opts.workDir, 'temporal.log') });
    stops.push(server.stop);
    temporalAddress = server.address;
  }
  return { adminDbUrl, temporalAddress, stops };
}
