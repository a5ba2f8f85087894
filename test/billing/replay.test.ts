import { describe, expect, it } from 'vitest';
import { recordedHistories, itReplaysEveryHistory } from '../support/histories.ts';

const files = recordedHistories(new URL('./histories/', import.meta.url));

/**
 * Recorded histories of real subscription lives (scripts/record-histories.ts) replayed
 * against today's workflow bundle: a change that breaks determinism (a new activity in the middle
 * of a cycle, a reordered step, a timer where a condition was) fails here before it reaches
 * running subscriptions.
 */
describe('subscription workflow replay', () => {
  it('has histories covering trial, cycles, pause, dunning, cancel and continue-as-new', () => {
    expect(files.length).toBeGreaterThanOrEqual(4);
    const kinds = new Set<string>();
    for (const { text } of files) {
      if (text.includes('"EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW"')) kinds.add('continue-as-new');
      if (text.includes('"pauseSubscription"')) kinds.add('pause');
      if (text.includes('"markUncollectible"')) kinds.add('dunning');
      if (text.includes('"START_CHILD_WORKFLOW_EXECUTION_INITIATED"') || text.includes('EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED')) kinds.add('collection');
    }
    expect([...kinds].sort()).toEqual(['collection', 'continue-as-new', 'dunning', 'pause']);
  });

  itReplaysEveryHistory(files);
});
