import { describe, expect, it } from 'vitest';
import proto from '@temporalio/proto';
import { activitySteps, itReplaysEveryHistory, recordedHistories, stepPath } from '../support/histories.ts';

const files = recordedHistories(new URL('./histories/', import.meta.url));

/**
 * Order workflow histories recorded before the first step became a local activity (with
 * scripts/record-histories.ts --area commerce) replayed against today's bundle: an order that was
 * open when the change was deployed goes on with the steps its history already has.
 */
describe('order workflow replay', () => {
  it('has histories of every path, each recorded with the first step as a server activity', () => {
    const paths = new Set<string>();
    for (const { history } of files) {
      const steps = activitySteps(history);
      expect(steps[0]).toEqual(['createOrder', 'activity']);
      const last = history.events!.at(-1)!.eventType;
      paths.add(`${stepPath(history)}${last === proto.temporal.api.enums.v1.EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED ? ' (refused)' : ''}`);
    }
    expect([...paths].sort()).toEqual([
      'createOrder', 'createOrder (refused)', 'createOrder,cancelOrder', 'createOrder,fulfillOrder', 'createOrder,markFulfillmentDelayed,fulfillOrder',
    ]);
  });

  itReplaysEveryHistory(files);
});
