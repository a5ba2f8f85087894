/**
 * Makes sure a Temporal CLI is available (TEMPORAL_CLI, PATH, .tools/bin, or built once with Go)
 * and says which one. Uses only Node built-ins, so CI can run it before `npm ci`:
 *   scripts/node24.sh node scripts/ensure-temporal.ts
 */
import { resolveTemporalCli } from '../platform/temporal-dev-server.ts';

try {
  const cli = await resolveTemporalCli();
  if (!cli) {
    console.error(
      'No Temporal CLI: install it (https://docs.temporal.io/cli) or Go (to build it), ' +
        'or set TEMPORAL_ADDRESS to an existing server.',
    );
    process.exit(1);
  }
  console.log(`Temporal CLI: ${cli.path} (${cli.source})`);
} catch (err) {
  console.error((err as Error).message);
  process.exit(1);
}
