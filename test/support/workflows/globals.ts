import { condition, defineQuery, defineSignal, setHandler } from '@temporalio/workflow';

/**
 * Test-only workflow code (never in production's bundle): workflows that write a global and a
 * module-level variable and read them back, so a test can see that the workflows sharing a thread's
 * V8 context each keep their own (test/workflows/workflow-context.test.ts).
 */
export interface SeenState {
  global: string | null;
  module: string | null;
}

export const revealSignal = defineSignal('reveal');
export const seenQuery = defineQuery<SeenState>('seen');

let moduleValue: string | undefined;

const seen = (): SeenState => ({
  global: ((globalThis as Record<string, unknown>).bpTestValue as string | undefined) ?? null,
  module: moduleValue ?? null,
});

/** Writes `value` to a global and to a module variable, then waits for `reveal` and answers what it sees. */
export async function globalsWriterWorkflow(value: string): Promise<SeenState> {
  (globalThis as Record<string, unknown>).bpTestValue = value;
  moduleValue = value;
  let revealed = false;
  setHandler(seenQuery, seen);
  setHandler(revealSignal, () => void (revealed = true));
  await condition(() => revealed);
  return seen();
}

/** Answers what it sees without writing anything. */
export async function globalsReaderWorkflow(): Promise<SeenState> {
  return seen();
}
