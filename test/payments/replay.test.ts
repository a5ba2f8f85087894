import { describe, expect, it } from 'vitest';
import proto from '@temporalio/proto';
import { activitySteps, recordedHistories, replayHistories } from '../support/histories.ts';

const { History } = proto.temporal.api.history.v1;
const files = recordedHistories(new URL('./histories/', import.meta.url));

/**
 * Payment workflow histories recorded before each change to its steps (with
 * scripts/record-histories.ts --area payments) replayed against today's bundle: a payment that was
 * running when a change was deployed goes on with the steps its history already has. Two
 * generations: the record step as a server activity (before 'payments-record-locally'), and the
 * record step local with the charge a server activity (before 'payments-charge-locally').
 */
describe('payment workflow replay', () => {
  it('has histories of every path, from before each change', () => {
    const paths = new Set<string>();
    for (const { text } of files) {
      const steps = activitySteps(History.fromObject(JSON.parse(text)));
      expect(steps.every(([name, kind]) => kind === 'activity' || name === 'recordPayment')).toBe(true);
      paths.add(steps.map(([name, kind]) => `${name}${kind === 'local' ? '(local)' : ''}`).join(','));
    }
    expect([...paths].sort()).toEqual(expect.arrayContaining([
      'recordPayment,chargePayment',
      'recordPayment,chargePayment,transferSplitPart,transferSplitPart,finishSplit',
      'recordPayment,chargePayment,transferSplitPart,transferSplitPart,reverseSplitTransfer,reserveRefund,executeRefund,finishSplit',
      'recordPayment,checkSplitBalance',
      'recordPayment,checkSplitBalance,transferSplitPart,transferSplitPart,reverseSplitTransfer,finishSplit',
      'recordPayment(local),chargePayment',
      'recordPayment(local),chargePayment,transferSplitPart,transferSplitPart,finishSplit',
    ]));
  });

  it('replays every recorded history without a nondeterminism error', async () => {
    const { failures, replayed } = await replayHistories(files);
    expect(failures).toEqual([]);
    expect(replayed).toBe(files.length);
  });
});
