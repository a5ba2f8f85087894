import { condition } from '@temporalio/workflow';

/**
 * Test-only workflow code, bundled beside the platform's workflows by the tests that need it (never
 * in production's bundle): `spinWorkflow` computes for `iterations` rounds without yielding, as a
 * workflow stuck in a loop would (test/workflows/deadlock-timeout.test.ts); with `afterCondition`
 * it first waits on a condition that is already true, so the loop runs in a later call into the
 * sandbox within the same activation (the SDK's unblocking of conditions), not the first.
 */
export async function spinWorkflow(iterations: number, afterCondition = false): Promise<number> {
  if (afterCondition) await condition(() => true);
  return spin(iterations);
}

/** The loop itself, also run outside the sandbox to size `iterations` to this machine's speed. */
export function spin(iterations: number): number {
  let x = 0;
  for (let i = 0; i < iterations; i++) x = (x * 31 + i) % 1_000_003;
  return x;
}
