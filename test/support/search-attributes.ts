import type { WorkflowHandle } from '@temporalio/client';

/**
 * A workflow's search attributes once `BpStatus` reads `status`: a workflow records it in the
 * workflow task after the activity that wrote the row an API answer comes from, so a test that saw
 * the row may describe the workflow a moment too early. Gives up after `timeoutMs` and returns the last.
 */
export async function searchAttributesWhen(handle: WorkflowHandle, status: string, timeoutMs = 10_000): Promise<Record<string, unknown>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { searchAttributes } = await handle.describe();
    if (searchAttributes.BpStatus?.[0] === status || Date.now() > deadline) return searchAttributes;
    await new Promise((r) => setTimeout(r, 100));
  }
}
