import type { MikroORM } from '@mikro-orm/postgresql';
import type { Client } from '@temporalio/client';
import type { PoolClient } from 'pg';
import { nativePool } from '../db/pool.ts';
import { EVENTS_CHANNEL } from '../domain/events/dispatch.ts';
import type { Logger } from '../platform/logger.ts';
import { dispatcherWorkflowId, nudgeDispatcherSignal, type DispatcherInput } from '../workflows/platform/shared.ts';

export interface EventDispatchTrigger {
  /** Signals the dispatcher (starting it if it is not running). */
  nudge(): void;
  stop(): Promise<void>;
}

const BATCH_SIZE = 200;
const RECONNECT_MS = 1000;

/**
 * Keeps delivery latency low without a Temporal call on any request path: every transaction that
 * writes events fires `NOTIFY bp_events` when it commits (a trigger, so events recorded by the API,
 * by activities or by scripts are all seen), and each worker process LISTENs and nudges the
 * dispatcher workflow with signal-with-start (which also starts it when it is not running).
 * Nudges are coalesced: one signal in flight, at most one queued. The dispatcher's own sweep
 * (`EVENT_DISPATCH_SWEEP_MS`) covers a lost notification or a listener that is reconnecting.
 */
export async function startEventDispatchTrigger(opts: {
  orm: MikroORM;
  client: Client;
  taskQueuePrefix: string;
  /** The platform area's task queue, where the dispatcher workflow runs. */
  taskQueue: string;
  sweepMs: number;
  /** Workflow task timeout of the dispatcher workflow when this trigger starts it; default: Temporal's (10 s). */
  workflowTaskTimeoutMs?: number;
  /** Heartbeat timeout of the dispatcher's activity (see DispatcherInput). */
  heartbeatTimeoutMs?: number;
  logger: Logger;
}): Promise<EventDispatchTrigger> {
  const workflowId = dispatcherWorkflowId(opts.taskQueuePrefix);
  const input: DispatcherInput = { sweepMs: opts.sweepMs, batchSize: BATCH_SIZE, heartbeatTimeoutMs: opts.heartbeatTimeoutMs };
  let stopped = false;
  let inFlight: Promise<void> | null = null;
  let again = false;

  const signalOnce = async () => {
    await opts.client.workflow.signalWithStart('eventDispatcherWorkflow', {
      workflowId,
      taskQueue: opts.taskQueue,
      args: [input],
      workflowTaskTimeout: opts.workflowTaskTimeoutMs,
      signal: nudgeDispatcherSignal,
      signalArgs: [],
    });
  };
  const nudge = () => {
    if (stopped) return;
    if (inFlight) {
      again = true;
      return;
    }
    inFlight = (async () => {
      do {
        again = false;
        try {
          await signalOnce();
        } catch (err) {
          if (!stopped) opts.logger.warn('could not nudge the event dispatcher; its sweep will pick the events up', { error: err });
          return;
        }
      } while (again && !stopped);
    })().finally(() => {
      inFlight = null;
    });
  };

  let listener: PoolClient | null = null;
  let releaseListener: (() => Promise<void>) | null = null;
  let reconnectTimer: NodeJS.Timeout | undefined;
  const listen = async () => {
    if (stopped) return;
    let held: PoolClient | undefined;
    try {
      const pool = await nativePool(opts.orm);
      const client = (held = await pool.connect());
      const onNotification = (msg: { channel: string }) => {
        if (msg.channel === EVENTS_CHANNEL) nudge();
      };
      const onError = (err: Error) => {
        if (listener !== client) return; // already handed back (stopping)
        listener = null;
        client.off('notification', onNotification);
        opts.logger.warn('event listener connection lost; reconnecting', { error: err });
        client.release(err);
        if (!stopped) reconnectTimer = setTimeout(() => void listen(), RECONNECT_MS);
      };
      client.on('notification', onNotification);
      client.on('error', onError);
      listener = client;
      releaseListener = async () => {
        client.off('notification', onNotification);
        await client.query(`unlisten ${EVENTS_CHANNEL}`).catch(() => undefined);
        client.off('error', onError);
        client.release();
      };
      await client.query(`listen ${EVENTS_CHANNEL}`);
      nudge(); // anything written while not listening
    } catch (err) {
      if (held && listener === held) {
        listener = null;
        held.release(err as Error);
      }
      if (stopped) return;
      opts.logger.warn('could not listen for events; retrying', { error: err });
      reconnectTimer = setTimeout(() => void listen(), RECONNECT_MS);
    }
  };
  await listen();

  return {
    nudge,
    async stop() {
      stopped = true;
      clearTimeout(reconnectTimer);
      if (listener) {
        listener = null;
        await releaseListener?.();
      }
      await inFlight;
    },
  };
}
