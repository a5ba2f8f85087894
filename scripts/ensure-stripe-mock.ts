/**
 * Makes sure the stripe-mock binary exists (PATH, STRIPE_MOCK_BIN, or `.tools/bin`, else builds it
 * once with `go install`), and prints its path. CI runs it before the tests:
 *   scripts/node24.sh node scripts/ensure-stripe-mock.ts
 */
import { ensureStripeMock } from '../platform/stripe-mock.ts';

try {
  console.log(await ensureStripeMock((line) => console.error(line)));
} catch (err) {
  console.error((err as Error).message);
  process.exit(1);
}
