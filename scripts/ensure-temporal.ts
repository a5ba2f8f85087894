/** Makes sure a Temporal CLI is available (PATH, .tools/bin, or built once with Go); says which. */
import { resolveTemporalCli } from '../platform/temporal-dev-server.ts';

const cli = await resolveTemporalCli();
if (!cli) {
  console.error('No Temporal CLI: install it (https://docs.temporal.io/cli) or Go (to build it), or set TEMPORAL_ADDRESS to an existing server.');
  process.exit(1);
}
console.log(`Temporal CLI: ${cli.path} (${cli.source})`);
