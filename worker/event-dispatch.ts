import type { MikroORM } from '@mikro-orm/postgresql';
import type { Client } from '@temporalio/client';
import type { PoolClient } from 'pg';
import { nativePool } from '../db/orm.ts';
import { EVENTS_CHANNEL } from '../domain/events/dispatch.ts';
import type { Logger } from '../platform/logger.ts';
import { taskQueueName } from '../platform/temporal.ts';
import { dispatcherWorkflowId, nudgeDispatcherSignal, WEBHOOKS_AREA, type DispatcherInput } from '../workflows/webhooks/shared.ts';

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
  sweepMs: number;
  logger: Logger;
}): Promise<EventDispatchTrigger> {
  const workflowId = dispatcherWorkflowId(opts.taskQueuePrefix);
  const input: DispatcherInput = { sweepMs: opts.sweepMs, batchSize: BATCH_SIZE };
  let stopped = false;
  let inFlight: Promise<void> | null = null;
  let again = false;

  const signalOnce = async () => {
    await opts.client.workflow.signalWithStart('eventDispatcherWorkflow', {
      workflowId,
      taskQueue: taskQueueName(opts.taskQueuePrefix, WEBHOOKS_AREA),
      args: [input],
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
  let reconnectTimer: NodeJS.Timeout | undefined;
  const listen = async () => {
    if (stopped) return;
    try {
      const pool = await nativePool(opts.orm);
      const client = await pool.connect();
      client.on('notification', (msg) => {
        if (msg.channel === EVENTS_CHANNEL) nudge();
      });
      client.once('error', (err) => {
        opts.logger.warn('event listener connection lost; reconnecting', { error: err });
        client.release(err);
        if (listener === client) listener = null;
        reconnectTimer = setTimeout(() => void listen(), RECONNECT_MS);
      });
      await client.query(`listen ${EVENTS_CHANNEL}`);
      listener = client;
      nudge(); // anything written while not listening
    } catch (err) {
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
      const client = listener;
      listener = null;
      if (client) {
        await client.query(`unlisten ${EVENTS_CHANNEL}`).catch(() => undefined);
        client.release();
      }
      await inFlight;
    },
  };
}
