/**
 * `npm run bench [-- filter]`: runs the scenarios in bench/scenarios.ts, prints each one's numbers,
 * then one summary table (scenario, ours, baseline, ratio, p50, p99, peak RSS of the API + worker
 * process) and writes everything as JSON (BENCH_JSON, default .data/bench/latest.json).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { loadavg } from 'node:os';
import { startBenchPlatform, startInfra } from './harness.ts';
import { scenarios } from './scenarios.ts';
import { summaryRow, type SummaryRow } from './summary.ts';

const filter = process.argv[2];
const selected = scenarios.filter((s) => !filter || s.name.includes(filter));
const infra = await startInfra();
const results: Record<string, Record<string, unknown>> = {};
const summary: SummaryRow[] = [];
const loadBefore = loadavg().map((l) => Math.round(l * 10) / 10);
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
const machine = { at: new Date().toISOString(), load_before: loadBefore, load_after: loadavg().map((l) => Math.round(l * 10) / 10) };
console.log('\nSummary (ours vs the baseline measured in the same run; RSS: peak of the API + worker process)');
console.table(summary);
console.log(`load average before ${machine.load_before.join(' ')}, after ${machine.load_after.join(' ')}`);
const out = process.env.BENCH_JSON ?? '.data/bench/latest.json';
mkdirSync(dirname(out), { recursive: true });
writeFileSync(out, JSON.stringify({ machine, summary, results }, null, 2));
console.log(JSON.stringify({ machine, summary, results }, null, 2));
