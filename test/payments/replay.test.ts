import { describe, expect, it } from 'vitest';
import { activitySteps, itReplaysEveryHistory, recordedHistories, stepPath } from '../support/histories.ts';

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
    for (const { history } of files) {
      const steps = activitySteps(history);
      expect(steps.every(([name, kind]) => kind === 'activity' || name === 'recordPayment')).toBe(true);
      paths.add(stepPath(history, { markLocal: true }));
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

  itReplaysEveryHistory(files);
});
