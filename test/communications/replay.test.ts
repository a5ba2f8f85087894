import { describe, expect, it } from 'vitest';
import { activitySteps, itReplaysEveryHistory, recordedHistories, stepPath } from '../support/histories.ts';

const files = recordedHistories(new URL('./histories/', import.meta.url));

/**
 * Call workflow histories recorded before 'calls-writes-locally' (with scripts/record-histories.ts
 * --area communications), when a call's progress, end and recording were written by server
 * activities, replayed against today's bundle: a call that was running when the change was deployed
 * goes on with the steps its history already has.
 */
describe('call workflow replay', () => {
  it('has histories of every path, from before the change', () => {
    const paths = new Set<string>();
    for (const { history } of files) {
      const steps = activitySteps(history);
      expect(steps.every(([name, kind]) => kind === 'activity' || name === 'recordCall')).toBe(true);
      paths.add(stepPath(history));
    }
    expect([...paths].sort()).toEqual(expect.arrayContaining([
      // answered and completed
      'recordCall,dialLeg,recordCallProgress,recordCallProgress,recordCallProgress,finishCall',
      // busy, then the fallback answered
      'recordCall,dialLeg,recordCallProgress,recordCallProgress,dialLeg,recordCallProgress,recordCallProgress,recordCallProgress,finishCall',
      // recorded, hung up, the recording collected
      'recordCall,dialLeg,recordCallProgress,recordCallProgress,recordCallProgress,fetchLeg,hangUpLeg,finishCall,collectRecording',
      // unanswered until ring_timeout
      'recordCall,dialLeg,recordCallProgress,recordCallProgress,fetchLeg,hangUpLeg,finishCall',
    ]));
  });

  itReplaysEveryHistory(files);
});
