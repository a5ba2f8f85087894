import { describe, expect, it } from 'vitest';
import proto from '@temporalio/proto';
import { activitySteps, recordedHistories, replayHistories } from '../support/histories.ts';

const { History } = proto.temporal.api.history.v1;
const files = recordedHistories(new URL('./histories/', import.meta.url));

/**
 * Payment workflow histories recorded before the record step became a local activity (with
 * scripts/record-histories.ts --area payments) replayed against today's bundle: a payment that was
 * running when the change was deployed goes on with the steps its history already has.
 */
describe('payment workflow replay', () => {
  it('has histories of every path, each recorded with the record step as a server activity', () => {
    const paths = new Set<string>();
    for (const { text } of files) {
      const steps = activitySteps(History.fromObject(JSON.parse(text)));
      expect(steps[0]).toEqual(['recordPayment', 'activity']);
      paths.add(steps.map(([name]) => name).join(','));
    }
    expect([...paths].sort()).toEqual(expect.arrayContaining([
      'recordPayment,chargePayment',
      'recordPayment,chargePayment,transferSplitPart,transferSplitPart,finishSplit',
      'recordPayment,chargePayment,transferSplitPart,transferSplitPart,reverseSplitTransfer,reserveRefund,executeRefund,finishSplit',
      'recordPayment,checkSplitBalance',
      'recordPayment,checkSplitBalance,transferSplitPart,transferSplitPart,reverseSplitTransfer,finishSplit',
    ]));
  });

  it('replays every recorded history without a nondeterminism error', async () => {
    const { failures, replayed } = await replayHistories(files);
    expect(failures).toEqual([]);
    expect(replayed).toBe(files.length);
  });
});
