/** CPU time of processes from /proc (Linux), for the probes that report CPU per request. */
import { readFileSync, readdirSync } from 'node:fs';

/** /proc's clock ticks per second (USER_HZ, 100 on Linux). */
export const TICKS_PER_SECOND = 100;

/** User + system CPU ticks of one process so far (all its threads); 0 once it is gone. */
export function cpuTicksOf(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return 0;
  }
}

/** CPU ticks so far of each process whose command name starts with `prefix` (`postgres`, `temporal`), by pid. */
export function cpuTicksByComm(prefix: string): Map<number, number> {
  const ticks = new Map<number, number>();
  for (const dir of readdirSync('/proc')) {
    if (!/^\d+$/.test(dir)) continue;
    try {
      if (readFileSync(`/proc/${dir}/comm`, 'utf8').startsWith(prefix)) ticks.set(Number(dir), cpuTicksOf(Number(dir)));
    } catch { /* gone meanwhile */ }
  }
  return ticks;
}

/**
 * The ticks the processes of `after` used since `before` (a process started meanwhile counts from
 * zero; one that exited meanwhile is not counted: /proc no longer has it).
 */
export function ticksSince(before: Map<number, number>, after: Map<number, number>): number {
  let ticks = 0;
  for (const [pid, now] of after) ticks += now - (before.get(pid) ?? 0);
  return ticks;
}

/**
 * Waits until process `pid` is (nearly) idle — under 15 % of a core over half a second — or `maxMs`
 * have passed: what a scenario's round left behind (workflows still finishing, events being
 * dispatched) is then not counted in the next round's figures. Resolves with the time waited.
 */
export async function settled(pid: number, maxMs = 15_000): Promise<number> {
  const started = Date.now();
  for (;;) {
    const before = cpuTicksOf(pid);
    await new Promise((resolve) => setTimeout(resolve, 500));
    if (cpuTicksOf(pid) - before < 0.15 * 0.5 * TICKS_PER_SECOND || Date.now() - started >= maxMs) return Date.now() - started;
  }
}

/**
 * The server's threads by what they do, from their names (`/proc/<pid>/task/<tid>/comm`): the main
 * thread (API, activities, the worker's loop), the workflow threads (worker/worker.ts names them
 * `bp-workflow-N`), V8's helper threads (garbage collection, compilation), the Temporal core's
 * threads (Rust: its tokio runtime, gRPC to the server, workflow processing) and the rest (libuv's
 * pool …).
 */
const THREAD_GROUPS: [group: string, comm: RegExp][] = [
  ['main', /^MainThread$/],
  ['workflow', /^bp-workflow-/],
  ['v8_helpers', /^V8Worker|^DelayedTaskSche/],
  ['temporal_core', /^tokio-runtime|^workflow-proces|^temporal-/],
];

/** CPU ticks so far of process `pid`'s threads, summed by `THREAD_GROUPS` (`other` for the rest). */
export function threadGroupTicks(pid: number): Map<string, number> {
  const ticks = new Map<string, number>();
  let tids: string[] = [];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch { /* gone */ }
  for (const tid of tids) {
    try {
      const comm = readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim();
      const fields = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8').split(') ')[1]!.split(' ');
      const group = THREAD_GROUPS.find(([, pattern]) => pattern.test(comm))?.[0] ?? 'other';
      ticks.set(group, (ticks.get(group) ?? 0) + Number(fields[11]) + Number(fields[12]));
    } catch { /* gone meanwhile */ }
  }
  return ticks;
}

/**
 * PostgreSQL's processes by what they do, from their titles (`/proc/<pid>/cmdline`, e.g.
 * `postgres: 15/main: walwriter`): the WAL writer, autovacuum, the other background processes
 * (checkpointer, background writer, statistics …) and the backends serving connections (the rest).
 */
const POSTGRES_ROLES: [role: string, title: RegExp][] = [
  ['wal_writer', /: walwriter/],
  ['autovacuum', /: autovacuum/],
  ['background', /: (checkpointer|background writer|logical replication|archiver|stats|startup)/],
];

function postgresRole(pid: number): string {
  let title = '';
  try {
    title = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  } catch { /* gone */ }
  return POSTGRES_ROLES.find(([, pattern]) => pattern.test(title))?.[0] ?? 'backends';
}

/** The ticks of `ticksSince`, by `POSTGRES_ROLES` (`backends` for the rest). */
function postgresRoleTicks(before: Map<number, number>, after: Map<number, number>): Map<string, number> {
  const ticks = new Map<string, number>();
  for (const [pid, now] of after) {
    const role = postgresRole(pid);
    ticks.set(role, (ticks.get(role) ?? 0) + now - (before.get(pid) ?? 0));
  }
  return ticks;
}

/** CPU so far of a server process (and of its groups of threads), PostgreSQL, Temporal and this process: the start of a measurement. */
export function cpuMark(serverPid: number) {
  return {
    serverPid, server: cpuTicksOf(serverPid), serverThreads: threadGroupTicks(serverPid),
    postgres: cpuTicksByComm('postgres'), temporal: cpuTicksByComm('temporal'), self: process.cpuUsage(),
  };
}

/** Microseconds of CPU per operation of each side since `mark`, over `operations` operations. */
export function cpuPerOperation(mark: ReturnType<typeof cpuMark>, operations: number) {
  const us = (ticks: number) => Math.round((ticks * 1e6) / TICKS_PER_SECOND / operations);
  const self = process.cpuUsage(mark.self);
  const postgresNow = cpuTicksByComm('postgres');
  return {
    server: us(cpuTicksOf(mark.serverPid) - mark.server),
    /**
     * `server` by its threads (`THREAD_GROUPS`); a thread that ended meanwhile is not counted, so the
     * parts may add up to a little less.
     */
    server_threads: Object.fromEntries([...threadGroupTicks(mark.serverPid)].map(([group, now]) => [group, us(now - (mark.serverThreads.get(group) ?? 0))])),
    postgres: us(ticksSince(mark.postgres, postgresNow)),
    /** `postgres` by its processes' roles (`POSTGRES_ROLES`). */
    postgres_roles: Object.fromEntries([...postgresRoleTicks(mark.postgres, postgresNow)].map(([role, ticks]) => [role, us(ticks)])),
    temporal: us(ticksSince(mark.temporal, cpuTicksByComm('temporal'))),
    load_generator: Math.round((self.user + self.system) / operations),
  };
}

/** `cpuPerOperation`'s microseconds as milliseconds with one decimal (nested groups too), for the probes' lines. */
export function inMilliseconds(us: Record<string, number | Record<string, number>>): Record<string, number | Record<string, number>> {
  const ms = (v: number) => Math.round(v / 100) / 10;
  return Object.fromEntries(Object.entries(us).map(([side, v]) => [side, typeof v === 'number' ? ms(v) : Object.fromEntries(Object.entries(v).map(([k, x]) => [k, ms(x)]))]));
}

type Sql = <T extends Record<string, unknown>>(text: string, values?: unknown[]) => Promise<T[]>;

/**
 * `BENCH_PGSS=1` (PostgreSQL started with `shared_preload_libraries = 'pg_stat_statements'`): what
 * PostgreSQL executed from now on. `print` lists the top statements as calls and execution
 * microseconds per operation; without BENCH_PGSS both do nothing.
 */
export async function statementsFromNow(sql: Sql) {
  const on = Boolean(process.env.BENCH_PGSS);
  if (on) await sql('create extension if not exists pg_stat_statements; select pg_stat_statements_reset()', []);
  return {
    async print(operations: number, top = 12): Promise<void> {
      if (!on) return;
      const rows = await sql<{ calls: string; ms: string; plan_ms: string; q: string }>(
        `select calls, total_exec_time as ms, total_plan_time as plan_ms, left(regexp_replace(query, '\\s+', ' ', 'g'), 110) as q
           from pg_stat_statements order by total_exec_time + total_plan_time desc limit $1`, [top]);
      const us = (ms: string) => Math.round((Number(ms) * 1000) / operations);
      // Planning is counted only with `pg_stat_statements.track_planning = on`.
      for (const r of rows) console.log(`  ${(Number(r.calls) / operations).toFixed(3)} calls ${us(r.ms)} µs${Number(r.plan_ms) ? ` + ${us(r.plan_ms)} µs planning` : ''}  ${r.q}`);
    },
  };
}
