import { describe, expect, it } from 'vitest';
import { activitySteps, itReplaysEveryHistory, recordedHistories, stepPath } from '../support/histories.ts';

const files = recordedHistories(new URL('./histories/', import.meta.url));

/** Histories from before 'calls-writes-locally': every write after the first was a server activity. */
const serverWrites = files.filter(({ history }) => activitySteps(history).every(([name, kind]) => kind === 'activity' || name === 'recordCall'));

/**
 * Call workflow histories (recorded with scripts/record-histories.ts --area communications) replayed
 * against today's bundle: a call that was running when a change was deployed goes on with the steps
 * its history already has. Nine are from before 'calls-writes-locally', when a call's progress, end
 * and recording were written by server activities; one is from a ring timeout that found its leg
 * already answered (a lost callback) and left it up, later hung up.
 */
describe('call workflow replay', () => {
  it('has histories of every path, from before the change', () => {
    const paths = new Set(serverWrites.map(({ history }) => stepPath(history)));
    expect(serverWrites).toHaveLength(9);
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

  it('has the ring timeout that found its leg answered: canceling left it up, a hangup ended it', () => {
    const paths = files.filter((f) => !serverWrites.includes(f)).map(({ history }) => stepPath(history));
    expect(paths).toContain('recordCall,dialLeg,recordCallProgress,recordCallProgress,hangUpLeg,recordCallProgress,hangUpLeg,finishCall');
  });

  itReplaysEveryHistory(files);
});
