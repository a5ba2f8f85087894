/**
 * Writes test/durations.json, the order test/support/sequencer.ts starts files in on a fresh clone:
 *   node scripts/test-durations.ts REPORT.json   from a whole run's JSON report
 *                                                (`npx vitest run --reporter=json --outputFile.json=REPORT.json`)
 *   node scripts/test-durations.ts               from the durations vitest cached on this machine
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const durations: Record<string, number> = {};
const seconds = (ms: number) => Math.round(ms / 100) / 10;
const report = process.argv[2];
if (report) {
  const { testResults } = JSON.parse(readFileSync(report, 'utf8')) as { testResults: { name: string; startTime: number; endTime: number }[] };
  for (const file of testResults) durations[relative(root, file.name)] = seconds(file.endTime - file.startTime);
} else {
  const cacheDir = join(root, 'node_modules/.vite/vitest');
  for (const dir of readdirSync(cacheDir, { withFileTypes: true }).filter((d) => d.isDirectory())) {
    const results = JSON.parse(readFileSync(join(cacheDir, dir.name, 'results.json'), 'utf8')) as {
      projects: Record<string, { files: Record<string, { duration: number }> }>;
    };
    for (const project of Object.values(results.projects)) {
      for (const [file, { duration }] of Object.entries(project.files)) durations[file] = seconds(duration);
    }
  }
}
const sorted = Object.fromEntries(Object.entries(durations).sort(([, a], [, b]) => b - a));
writeFileSync(join(root, 'test/durations.json'), `${JSON.stringify(sorted, null, 2)}\n`);
console.log(`test/durations.json: ${Object.keys(sorted).length} files`);
