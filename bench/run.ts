/** `npm run bench [-- filter]`: runs the scenarios in bench/scenarios.ts and prints their numbers. */
import { startBenchPlatform, startInfra } from './harness.ts';
import { scenarios } from './scenarios.ts';

const filter = process.argv[2];
const selected = scenarios.filter((s) => !filter || s.name.includes(filter));
const infra = await startInfra();
const results: Record<string, Record<string, unknown>> = {};
try {
  for (const scenario of selected) {
    console.log(`\n▶ ${scenario.name}`);
    const platform = await startBenchPlatform(infra, { env: scenario.env });
    try {
      results[scenario.name] = await scenario.run(platform);
      console.table(results[scenario.name]);
    } finally {
      await platform.close();
    }
  }
} finally {
  await infra.stop();
}
console.log(JSON.stringify(results, null, 2));
