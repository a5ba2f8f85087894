import { readdirSync, readFileSync } from 'node:fs';
import proto from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { inject } from 'vitest';

const { History } = proto.temporal.api.history.v1;

/** The recorded histories of a folder (scripts/record-histories.ts): file names and texts. */
export function recordedHistories(dir: URL): { name: string; text: string }[] {
  return readdirSync(dir).filter((f) => f.endsWith('.json')).sort()
    .map((name) => ({ name, text: readFileSync(new URL(name, dir), 'utf8') }));
}

/**
 * Replays recorded histories against the run's workflow bundle: what each one's replay failed
 * with (nondeterminism: a step added, removed or reordered without `patched`), and how many ran.
 */
export async function replayHistories(recorded: { name: string; text: string }[]): Promise<{ failures: string[]; replayed: number }> {
  const histories = recorded.map(({ name, text }) => ({ workflowId: name.replace(/\.json$/, ''), history: History.fromObject(JSON.parse(text)) }));
  const failures: string[] = [];
  let replayed = 0;
  for await (const result of Worker.runReplayHistories({ workflowBundle: { codePath: inject('bundlePath') } }, histories)) {
    replayed++;
    if (result.error) failures.push(`${result.workflowId}: ${result.error.message}`);
  }
  return { failures, replayed };
}
