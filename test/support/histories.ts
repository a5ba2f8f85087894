import { readdirSync, readFileSync } from 'node:fs';
import proto from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { expect, inject, it } from 'vitest';

const { History } = proto.temporal.api.history.v1;

/** A recorded history: its file name, its text (protobuf's JSON form) and the history itself. */
export interface RecordedHistory {
  name: string;
  text: string;
  history: proto.temporal.api.history.v1.IHistory;
}

/** The recorded histories of a folder (scripts/record-histories.ts). */
export function recordedHistories(dir: URL): RecordedHistory[] {
  return readdirSync(dir).filter((f) => f.endsWith('.json')).sort().map((name) => {
    const text = readFileSync(new URL(name, dir), 'utf8');
    return { name, text, history: History.fromObject(JSON.parse(text)) };
  });
}

/**
 * Replays recorded histories against the run's workflow bundle: what each one's replay failed
 * with (nondeterminism: a step added, removed or reordered without `patched`), and how many ran.
 */
export async function replayHistories(recorded: readonly Pick<RecordedHistory, 'name' | 'history'>[]): Promise<{ failures: string[]; replayed: number }> {
  const histories = recorded.map(({ name, history }) => ({ workflowId: name.replace(/\.json$/, ''), history }));
  const failures: string[] = [];
  let replayed = 0;
  for await (const result of Worker.runReplayHistories({ workflowBundle: { codePath: inject('bundlePath') } }, histories)) {
    replayed++;
    if (result.error) failures.push(`${result.workflowId}: ${result.error.message}`);
  }
  return { failures, replayed };
}

/** The test every area's replay file has: each recorded history replays without a nondeterminism error. */
export function itReplaysEveryHistory(recorded: RecordedHistory[]): void {
  it('replays every recorded history without a nondeterminism error', async () => {
    const { failures, replayed } = await replayHistories(recorded);
    expect(failures).toEqual([]);
    expect(replayed).toBe(recorded.length);
  });
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

/** The results of a workflow's local activities of one type, in order (each one's marker keeps its result). */
export function localActivityResults<T>(history: proto.temporal.api.history.v1.IHistory, type: string): T[] {
  return (history.events ?? []).flatMap((e): T[] => {
    const marker = e.markerRecordedEventAttributes;
    if (marker?.markerName !== 'core_local_activity') return [];
    const data = JSON.parse(Buffer.from(marker.details!.data!.payloads![0]!.data!).toString()) as { activity_type: string };
    if (data.activity_type !== type) return [];
    return [JSON.parse(Buffer.from(marker.details!.result!.payloads![0]!.data!).toString()) as T];
  });
}
