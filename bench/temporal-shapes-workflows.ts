/**
 * The workflows of bench/temporal-shapes-probe.ts: the same work (none, or no-op local
 * activities) reached through a plain start or through update-with-start, to price each shape of
 * a workflow-backed request on the Temporal server and the worker, apart from the platform's work.
 */
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import {
  allHandlersFinished, condition, defineUpdate, proxyLocalActivities, setHandler, upsertSearchAttributes,
} from '@temporalio/workflow';

export interface ShapeActivities {
  noop(): Promise<null>;
}

const local = proxyLocalActivities<ShapeActivities>({ startToCloseTimeout: '10s' });
const STATUS = defineSearchAttributeKey('BpStatus', SearchAttributeType.KEYWORD);

export const outcome = defineUpdate<null>('outcome');

export interface Shape {
  /** No-op local activities run one after the other (a payment runs two in its first task: record, charge). */
  locals: number;
  /** One search-attribute upsert at the end (a payment records its status). */
  status: boolean;
}

async function work(shape: Shape): Promise<void> {
  for (let i = 0; i < shape.locals; i++) await local.noop();
  if (shape.status) upsertSearchAttributes([{ key: STATUS, value: 'succeeded' }]);
}

/** Started plainly; the caller awaits its result. */
export async function plainShape(shape: Shape): Promise<null> {
  await work(shape);
  return null;
}

/** Started with the `outcome` update, which answers when the work is done (the payments' shape). */
export async function updateShape(shape: Shape): Promise<null> {
  let done = false;
  setHandler(outcome, async () => {
    await condition(() => done);
    return null;
  });
  await work(shape);
  done = true;
  await condition(allHandlersFinished);
  return null;
}
