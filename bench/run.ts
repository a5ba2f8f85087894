/**
 * `npm run bench [-- filter]`: runs the scenarios in bench/scenarios.ts, prints each one's numbers,
 * then one summary table (scenario, ours, baseline, ratio, p50, p99, peak RSS of the API + worker
 * process) and writes everything as JSON (BENCH_JSON, default .data/bench/latest.json).
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { cpus, loadavg, release, totalmem } from 'node:os';
import pg from 'pg';
import { startBenchPlatform, startInfra, type Infra } from './harness.ts';
import { scenarios } from './scenarios.ts';
import { summaryRow, type SummaryRow } from './summary.ts';

const filter = process.argv[2];
const selected = scenarios.filter((s) => !filter || s.name.includes(filter));
const infra = await startInfra();
const results: Record<string, Record<string, unknown>> = {};
const summary: SummaryRow[] = [];
const loadBefore = loadavg().map((l) => Math.round(l * 10) / 10);
const host = await hostOf(infra);
try {
  for (const scenario of selected) {
    console.log(`\n▶ ${scenario.name}`);
    if ('standalone' in scenario) {
      const { result, rssMb } = await scenario.standalone(infra);
      results[scenario.name] = result;
      console.table(result);
      summary.push(summaryRow(scenario.name, result, rssMb));
      continue;
    }
    const platform = await startBenchPlatform(infra, { env: scenario.env });
    try {
      results[scenario.name] = await scenario.run(platform);
      console.table(results[scenario.name]);
      summary.push(summaryRow(scenario.name, results[scenario.name]!, platform.peakRssMb()));
    } finally {
      await platform.close();
    }
  }
} finally {
  await infra.stop();
}
const machine = { at: new Date().toISOString(), ...host, load_before: loadBefore, load_after: loadavg().map((l) => Math.round(l * 10) / 10) };
console.log('\nSummary (ours vs the baseline measured in the same run; RSS: peak of the API + worker process)');
console.table(summary);
console.log(`${machine.cpus} × ${machine.cpu_model}, ${machine.memory_gb} GB, Node ${machine.node}, ${machine.postgres}, commit ${machine.commit}`);
console.log(`load average before ${machine.load_before.join(' ')}, after ${machine.load_after.join(' ')}`);
const out = process.env.BENCH_JSON ?? '.data/bench/latest.json';
mkdirSync(dirname(out), { recursive: true });
writeFileSync(out, JSON.stringify({ machine, summary, results }, null, 2));
console.log(JSON.stringify({ machine, summary, results }, null, 2));

/** What the table ran on, written beside it (docs/benchmarks.md keeps each table with its machine). */
async function hostOf(infra: Infra) {
  const client = new pg.Client({ connectionString: infra.adminDbUrl });
  let postgres = 'PostgreSQL (version unknown)';
  try {
    await client.connect();
    postgres = `PostgreSQL ${(await client.query<{ v: string }>("select current_setting('server_version') as v")).rows[0]!.v}`;
  } catch {
    // the version is a label; the run goes on without it
  } finally {
    await client.end().catch(() => undefined);
  }
  let commit = 'unknown';
  try {
    commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    if (execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim()) commit += ' (modified)';
  } catch {
    // not a git checkout
  }
  return {
    cpus: cpus().length, cpu_model: cpus()[0]?.model.trim() ?? 'unknown', memory_gb: Math.round(totalmem() / 2 ** 30),
    kernel: release(), node: process.version, postgres, commit,
  };
}
