/**
 * An empty workflow: the benchmark's bare-Temporal baseline (start and complete, nothing else),
 * run on the payments queue so it competes for the same worker as the payments it is compared to.
 */
export async function paymentsBaselineWorkflow(): Promise<null> {
  return null;
}
