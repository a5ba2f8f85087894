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
