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
  // The two servers start side by side (each is seconds of another process's work).
  const [postgres, temporal] = await Promise.allSettled([
    opts.databaseUrl
      ? { url: opts.databaseUrl, stop: undefined }
      : import('./embedded-postgres.ts').then(({ startEmbeddedPostgres }) => startEmbeddedPostgres({ dataDir: join(opts.workDir, 'pg'), persistent: false })),
    opts.temporalAddress
      ? { address: opts.temporalAddress, stop: undefined }
      : import('./temporal-dev-server.ts').then(({ startTemporalDevServer }) => startTemporalDevServer({ uiPort: null, logFile: join(opts.workDir, 'temporal.log') })),
  ]);
  const stops = [postgres, temporal].flatMap((started) => (started.status === 'fulfilled' && started.value.stop ? [started.value.stop] : []));
  if (postgres.status === 'rejected' || temporal.status === 'rejected') {
    // One failed: the other does not outlive it.
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
    throw postgres.status === 'rejected' ? postgres.reason : (temporal as PromiseRejectedResult).reason;
  }
  return { adminDbUrl: postgres.value.url, temporalAddress: temporal.value.address, stops };
}
