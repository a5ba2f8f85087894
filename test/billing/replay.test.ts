import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import proto from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { describe, expect, inject, it } from 'vitest';

const { History } = proto.temporal.api.history.v1;
const dir = fileURLToPath(new URL('./histories/', import.meta.url));
const files = readdirSync(dir).filter((f) => f.endsWith('.json')).sort();

/**
 * Recorded histories of real subscription lives (scripts/record-billing-histories.ts) replayed
 * against today's workflow bundle: a change that breaks determinism (a new activity in the middle
 * of a cycle, a reordered step, a timer where a condition was) fails here before it reaches
 * running subscriptions.
 */
describe('subscription workflow replay', () => {
  it('has histories covering trial, cycles, pause, dunning, cancel and continue-as-new', () => {
    expect(files.length).toBeGreaterThanOrEqual(4);
    const kinds = new Set<string>();
    for (const f of files) {
      const text = readFileSync(dir + f, 'utf8');
      if (text.includes('"EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW"')) kinds.add('continue-as-new');
      if (text.includes('"pauseSubscription"')) kinds.add('pause');
      if (text.includes('"markUncollectible"')) kinds.add('dunning');
      if (text.includes('"START_CHILD_WORKFLOW_EXECUTION_INITIATED"') || text.includes('EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED')) kinds.add('collection');
    }
    expect([...kinds].sort()).toEqual(['collection', 'continue-as-new', 'dunning', 'pause']);
  });

  it('replays every recorded history without a nondeterminism error', async () => {
    const histories = files.map((f) => ({ workflowId: f.replace(/\.json$/, ''), history: History.fromObject(JSON.parse(readFileSync(dir + f, 'utf8'))) }));
    const failures: string[] = [];
    let replayed = 0;
    for await (const result of Worker.runReplayHistories({ workflowBundle: { codePath: inject('bundlePath') } }, histories)) {
      replayed++;
      if (result.error) failures.push(`${result.workflowId}: ${result.error.message}`);
    }
    expect(failures).toEqual([]);
    expect(replayed).toBe(files.length);
  });
});
