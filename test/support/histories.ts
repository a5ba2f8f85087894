import { readdirSync, readFileSync } from 'node:fs';
import proto from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { inject } from 'vitest';

const { History } = proto.temporal.api.history.v1;

/** The recorded histories of a folder (scripts/record-histories.ts): file names and texts. */
export function recordedHistories(dir: URL): { name: string; text: string }[] {
  return readdirSync(dir).filter((f) => f.endsWith('.json')).sort()
    .map((name) => ({ name, text: readFileSync(new URL(name, dir), 'utf8') }));
}

/**
 * Replays recorded histories against the run's workflow bundle: what each one's replay failed
 * with (nondeterminism: a step added, removed or reordered without `patched`), and how many ran.
 */
export async function replayHistories(recorded: { name: string; text: string }[]): Promise<{ failures: string[]; replayed: number }> {
  const histories = recorded.map(({ name, text }) => ({ workflowId: name.replace(/\.json$/, ''), history: History.fromObject(JSON.parse(text)) }));
  const failures: string[] = [];
  let replayed = 0;
  for await (const result of Worker.runReplayHistories({ workflowBundle: { codePath: inject('bundlePath') } }, histories)) {
    replayed++;
    if (result.error) failures.push(`${result.workflowId}: ${result.error.message}`);
  }
  return { failures, replayed };
}

/**
 * The activities a workflow's history shows, in order: `activity` for one scheduled on the server,
 * `local` for a local activity (a marker whose data names the activity type).
 */
export function activitySteps(history: proto.temporal.api.history.v1.IHistory): [string, 'activity' | 'local'][] {
  return (history.events ?? []).flatMap((e): [string, 'activity' | 'local'][] => {
    const scheduled = e.activityTaskScheduledEventAttributes?.activityType?.name;
    if (scheduled) return [[scheduled, 'activity']];
    const marker = e.markerRecordedEventAttributes;
    if (marker?.markerName !== 'core_local_activity') return [];
    const data = JSON.parse(Buffer.from(marker.details!.data!.payloads![0]!.data!).toString()) as { activity_type: string };
    return [[data.activity_type, 'local']];
  });
}
