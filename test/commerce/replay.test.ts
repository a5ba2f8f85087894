import { describe, expect, it } from 'vitest';
import proto from '@temporalio/proto';
import { activitySteps, recordedHistories, replayHistories } from '../support/histories.ts';

const { History } = proto.temporal.api.history.v1;
const files = recordedHistories(new URL('./histories/', import.meta.url));

/**
 * Order workflow histories recorded before the first step became a local activity (with
 * scripts/record-histories.ts --area commerce) replayed against today's bundle: an order that was
 * open when the change was deployed goes on with the steps its history already has.
 */
describe('order workflow replay', () => {
  it('has histories of every path, each recorded with the first step as a server activity', () => {
    const paths = new Set<string>();
    for (const { text } of files) {
      const history = History.fromObject(JSON.parse(text));
      const steps = activitySteps(history);
      expect(steps[0]).toEqual(['createOrder', 'activity']);
      const last = history.events!.at(-1)!.eventType;
      paths.add(`${steps.map(([name]) => name).join(',')}${last === proto.temporal.api.enums.v1.EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED ? ' (refused)' : ''}`);
    }
    expect([...paths].sort()).toEqual([
      'createOrder', 'createOrder (refused)', 'createOrder,cancelOrder', 'createOrder,fulfillOrder', 'createOrder,markFulfillmentDelayed,fulfillOrder',
    ]);
  });

  it('replays every recorded history without a nondeterminism error', async () => {
    const { failures, replayed } = await replayHistories(files);
    expect(failures).toEqual([]);
    expect(replayed).toBe(files.length);
  });
});
