import type { MikroORM } from '@mikro-orm/postgresql';
import type { Client } from '@temporalio/client';
import type { PoolClient } from 'pg';
import { nativePool } from '../db/pool.ts';
import { EVENTS_CHANNEL, nextClaimExpiryMs } from '../domain/events/dispatch.ts';
import type { DispatchBatchResult } from '../domain/events/consumers.ts';
import type { Logger } from '../platform/logger.ts';
import { dispatcherWorkflowId, nudgeDispatcherSignal, type DispatcherInput } from '../workflows/platform/shared.ts';

export interface EventDispatchTrigger {
  /** Runs a dispatcher pass in this process now (another one when all are busy: as soon as one is free). */
  kick(): void;
  stop(): Promise<void>;
}

const RECONNECT_MS = 1000;
/** After a pass that threw (the database away): the next one no sooner than this. */
const PASS_RETRY_MS = 1000;
/** A claim's expiry is checked this much after it is due (clock steps between processes and PostgreSQL). */
const EXPIRY_SLACK_MS = 50;

/**
 * Delivers events as soon as they commit, without a Temporal call on any request path or between
 * the commit and the delivery: every transaction that writes events fires `NOTIFY bp_events` when
 * it commits (a trigger, so events recorded by the API, by activities or by scripts are all seen),
 * and each worker process LISTENs and runs dispatcher passes itself (`dispatch`, up to `passes`
 * claiming and planning at once, each claiming up to `batchSize` events: passes in this process and
 * in others never take the same event; a pass that has planned waits for its workflow starts
 * beside the next ones, under the process's start limit). Notifications that arrive while every
 * pass is busy are coalesced into the next pass. When its passes go idle, the process also runs
 * one when the earliest claim of another pass expires (a pass lost with its process). The
 * dispatcher workflow (started here with signal-with-start when the listener starts) sweeps the
 * outbox every `sweepMs` on top, so a lost notification, a listener that is reconnecting or a
 * process without passes costs at most that.
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
  /**
   * One dispatcher pass in this process (domain/events/dispatch.ts with the worker's services). It
   * calls `planned` once only workflow starts are left (see DispatchDeps.planned): the pass's place
   * goes to the next claim then, so events are claimed and planned (a webhook's first attempt made)
   * at the pace of planning, not of the workflow starts behind them.
   */
  dispatch(batchSize: number, planned: (more: boolean) => void): Promise<DispatchBatchResult>;
  /** Passes of this process claiming and planning at once, and events per pass. */
  passes: number;
  batchSize: number;
  /**
   * Passes that have planned and wait for their workflow starts, at most (the starts of all of them
   * share the process's start limit): beyond it, claiming waits for one to finish, so a burst's
   * claimed-but-unstarted events stay bounded (this many batches): EVENT_DISPATCH_WAITING_PASSES.
   */
  waitingPasses: number;
  logger: Logger;
}): Promise<EventDispatchTrigger> {
  const workflowId = dispatcherWorkflowId(opts.taskQueuePrefix);
  // The sweeper's passes take as many events as the local ones: a pass of 200 in the middle of a
  // burst held its events for seconds.
  const input: DispatcherInput = { sweepMs: opts.sweepMs, batchSize: opts.batchSize, heartbeatTimeoutMs: opts.heartbeatTimeoutMs };
  let stopped = false;

  /** Starts (or nudges) the sweeper workflow: once when the listener (re)starts. */
  let sweeperStart: Promise<unknown> | undefined;
  const startSweeper = () => {
    sweeperStart = opts.client.workflow.signalWithStart('eventDispatcherWorkflow', {
      workflowId,
      taskQueue: opts.taskQueue,
      args: [input],
      workflowTaskTimeout: opts.workflowTaskTimeoutMs,
      signal: nudgeDispatcherSignal,
      signalArgs: [],
    }).catch((err: unknown) => {
      if (!stopped) opts.logger.warn('could not start the event dispatcher workflow; passes still run on notifications', { error: err });
    });
  };

  let active = 0;
  let wanted = false;
  const running = new Set<Promise<void>>();
  /** Passes past their planning, waiting for their workflow starts (see `opts.dispatch`). */
  const finishing = new Set<Promise<void>>();
  let retryTimer: NodeJS.Timeout | undefined;
  let expiryTimer: NodeJS.Timeout | undefined;
  const idle = () => active === 0 && finishing.size === 0;

  const runPasses = async () => {
    try {
      while (wanted && !stopped) {
        wanted = false;
        while (finishing.size >= opts.waitingPasses && !stopped) await Promise.race(finishing);
        if (stopped) return;
        let handOff!: (more: boolean) => void;
        const planned = new Promise<boolean>((resolve) => (handOff = resolve));
        const pass = opts.dispatch(opts.batchSize, handOff);
        let more: boolean;
        try {
          more = await Promise.race([planned, pass.then((result) => result.more)]);
        } catch (err) {
          if (stopped) return;
          opts.logger.warn('event dispatch pass failed; trying again shortly', { error: err });
          clearTimeout(retryTimer);
          retryTimer = setTimeout(kick, PASS_RETRY_MS);
          return;
        }
        // Planned: its starts go on beside the next pass, which may claim now.
        const rest = pass.then(() => undefined, (err: unknown) => {
          if (!stopped) opts.logger.warn('event dispatch pass failed after planning; its events are taken again when its claim expires', { error: err });
        }).finally(() => {
          finishing.delete(rest);
          if (idle() && !stopped) void armExpiryCheck();
        });
        finishing.add(rest);
        // A full batch: more are waiting; another pass takes the next ones beside this one.
        if (more) {
          wanted = true;
          spawn();
        }
      }
    } finally {
      active--;
      if (idle() && !stopped) void armExpiryCheck();
    }
  };
  const spawn = () => {
    if (stopped || active >= opts.passes) return;
    active++;
    const pass = runPasses();
    running.add(pass);
    void pass.finally(() => running.delete(pass));
  };
  function kick() {
    wanted = true;
    spawn();
  }
  const armExpiryCheck = async () => {
    let ms: number | null;
    try {
      ms = await nextClaimExpiryMs(opts.orm);
    } catch {
      return; // the sweep covers it
    }
    if (ms === null || stopped || !idle()) return;
    clearTimeout(expiryTimer);
    expiryTimer = setTimeout(kick, ms + EXPIRY_SLACK_MS);
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
        if (msg.channel === EVENTS_CHANNEL) kick();
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
      kick(); // anything written while not listening
      startSweeper();
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
    kick,
    async stop() {
      stopped = true;
      clearTimeout(reconnectTimer);
      clearTimeout(retryTimer);
      clearTimeout(expiryTimer);
      if (listener) {
        listener = null;
        await releaseListener?.();
      }
      await Promise.all([...running, sweeperStart]);
      await Promise.all([...finishing]);
    },
  };
}
