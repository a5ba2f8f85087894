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

/** A local activity's marker in a history: its activity type and its result (undefined for another event). */
function localActivityMarker(e: proto.temporal.api.history.v1.IHistoryEvent): { type: string; result: () => unknown } | undefined {
  const marker = e.markerRecordedEventAttributes;
  if (marker?.markerName !== 'core_local_activity') return undefined;
  const payload = (name: 'data' | 'result') => JSON.parse(Buffer.from(marker.details![name]!.payloads![0]!.data!).toString()) as unknown;
  return { type: (payload('data') as { activity_type: string }).activity_type, result: () => payload('result') };
}

/**
 * The activities a workflow's history shows, in order: `activity` for one scheduled on the server,
 * `local` for a local activity (a marker whose data names the activity type).
 */
export function activitySteps(history: proto.temporal.api.history.v1.IHistory): [string, 'activity' | 'local'][] {
  return (history.events ?? []).flatMap((e): [string, 'activity' | 'local'][] => {
    const scheduled = e.activityTaskScheduledEventAttributes?.activityType?.name;
    if (scheduled) return [[scheduled, 'activity']];
    const local = localActivityMarker(e);
    return local ? [[local.type, 'local']] : [];
  });
}

/**
 * A history's path, for the replay tests' check that every path was recorded: its activities'
 * names in order, joined by commas; with `markLocal`, a local one as `name(local)`.
 */
export function stepPath(history: proto.temporal.api.history.v1.IHistory, opts: { markLocal?: boolean } = {}): string {
  return activitySteps(history).map(([name, kind]) => (opts.markLocal && kind === 'local' ? `${name}(local)` : name)).join(',');
}

/** The results of a workflow's local activities of one type, in order (each one's marker keeps its result). */
export function localActivityResults<T>(history: proto.temporal.api.history.v1.IHistory, type: string): T[] {
  return (history.events ?? []).flatMap((e): T[] => {
    const local = localActivityMarker(e);
    return local?.type === type ? [local.result() as T] : [];
  });
}
