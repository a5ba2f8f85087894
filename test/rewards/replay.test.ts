import { describe, expect, it } from 'vitest';
import { activitySteps, itReplaysEveryHistory, recordedHistories } from '../support/histories.ts';

const files = recordedHistories(new URL('./histories/', import.meta.url));

/**
 * Loyalty workflow histories (recorded with scripts/record-histories.ts --area rewards from the
 * rewards tests, 2026-11-28) replayed against today's bundle. A customer's loyalty workflow lives
 * for years (continued as new), so it is running whenever a change is deployed: a change to its
 * steps must keep these replaying (behind `patched`), or the running ones fail.
 */
describe('loyalty workflow replay', () => {
  it('has histories of every ledger change', () => {
    const names = new Set<string>();
    for (const { history } of files) {
      const steps = activitySteps(history);
      expect(steps.every(([, kind]) => kind === 'activity')).toBe(true);
      for (const [name] of steps) names.add(name);
    }
    expect([...names].sort()).toEqual(['adjustPoints', 'processDue', 'recordAward', 'reevaluateTier', 'reversePoints']);
  });

  itReplaysEveryHistory(files);
});
