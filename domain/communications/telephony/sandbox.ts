import { createHash, randomBytes } from 'node:crypto';
import { getExample } from 'awesome-phonenumber';
import type { Pool } from 'pg';
import type { QualitySample } from '../quality.ts';
import { parseE164 } from '../phone.ts';
import { toneWav } from '../wav.ts';
import type {
  CarrierCallState, CarrierCallStatus, NumberSearch, PlaceCallRequest, ProviderMessageStatus, SendMessageRequest, StatusCallback,
  TelephonyAdapter,
} from './types.ts';

/**
 * The sandbox carrier: behaves like a real one (Twilio-like status callbacks, delivered
 * asynchronously, sometimes twice or out of order; quality samples; recordings; a number inventory),
 * with outcomes chosen by the destination, like Stripe's test cards. Time is compressed: one second
 * of call time takes `secondMs` real milliseconds. Its ledger (`sandbox_telephony_calls`) plays the
 * carrier's own database: a call's progress is a function of when it was placed and whether it was
 * hung up, so it carries on (and can be asked for) after the process that placed it died.
 */
export const SANDBOX_CALL_SCENARIOS = {
  '+15005550001': 'busy',
  '+15005550002': 'no_answer',
  '+15005550003': 'failed',
  '+15005550004': 'poor_quality',
  '+15005550005': 'chaotic_callbacks',
  '+15005550006': 'long_call',
  '+15005550007': 'lost_callbacks',
} as const;
export type CallScenario = (typeof SANDBOX_CALL_SCENARIOS)[keyof typeof SANDBOX_CALL_SCENARIOS] | 'answered';

/** Messages to this number fail (undeliverable); every other one is sent, delivered, then read. */
export const SANDBOX_UNDELIVERABLE = '+15005550003';
/** The sandbox has no local numbers left in this area code (409 with nearby area codes). */
export const SANDBOX_EXHAUSTED_AREA_CODE = '212';

/** When (in call seconds after placing) each thing happens. */
export const SANDBOX_TIMELINE = { initiated: 0.2, ringing: 1, answered: 4, talk: 30, longTalk: 3600, busyAt: 3, failedAt: 1, carrierRingLimit: 600 } as const;

const NEARBY: Record<string, string[]> = {
  '212': ['646', '332', '917', '718', '347'],
  '415': ['628', '510', '650'],
  '310': ['424', '213', '323'],
};

interface CallRow {
  carrier_call_id: string;
  idempotency_key: string;
  to_number: string;
  from_number: string;
  scenario: CallScenario;
  second_ms: number;
  ring_timeout: number;
  record: boolean;
  placed_at: Date;
  hung_up_at: Date | null;
}

export interface SandboxTelephonyOptions {
  /** Real ms per call second. */
  secondMs: number;
  /** Chance that an ordinary callback is delivered twice (0–1). */
  duplicateRate: number;
  /** Largest extra delivery delay, in call seconds (callbacks close together may swap). */
  maxDeliveryJitter: number;
}

function seeded(seed: string): () => number {
  let state = createHash('sha256').update(seed).digest().readUInt32LE(0) || 1;
  return () => {
    // xorshift32
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return ((state >>> 0) % 1_000_000) / 1_000_000;
  };
}

export function scenarioOf(to: string): CallScenario {
  return (SANDBOX_CALL_SCENARIOS as Record<string, CallScenario>)[to] ?? 'answered';
}

export class SandboxTelephony implements TelephonyAdapter {
  readonly name = 'sandbox';
  readonly secondMs: number;
  private readonly options: SandboxTelephonyOptions;
  private readonly getPool: () => Promise<Pool>;
  private readonly timers = new Map<string, NodeJS.Timeout[]>();

  constructor(pool: () => Promise<Pool>, options: Partial<SandboxTelephonyOptions> = {}) {
    this.getPool = pool;
    this.options = { secondMs: 100, duplicateRate: 0.15, maxDeliveryJitter: 0.9, ...options };
    this.secondMs = this.options.secondMs;
  }

  /** Rows of the ledger; timestamps arrive as text from the ORM's pool. */
  private async query<T extends object>(text: string, values: unknown[]): Promise<T[]> {
    const rows = (await (await this.getPool()).query(text, values)).rows as Record<string, unknown>[];
    for (const row of rows) {
      for (const col of ['placed_at', 'hung_up_at']) if (typeof row[col] === 'string') row[col] = new Date(row[col] as string);
    }
    return rows as T[];
  }

  async placeCall(req: PlaceCallRequest, deliver: (cb: StatusCallback) => Promise<void>): Promise<{ carrierCallId: string }> {
    const id = `CA${randomBytes(16).toString('hex')}`;
    const [row] = await this.query<CallRow>(
      `insert into sandbox_telephony_calls (carrier_call_id, idempotency_key, to_number, from_number, scenario, second_ms, ring_timeout, record, placed_at)
       values ($1, $2, $3, $4, $5, $6, $7, $8, now())
       on conflict (idempotency_key) do update set attempts = sandbox_telephony_calls.attempts + 1
       returning *`,
      [id, req.idempotencyKey, req.to, req.from, scenarioOf(req.to), this.secondMs, req.ringTimeout, req.record]);
    if (row!.carrier_call_id === id) this.schedule(row!, req, deliver);
    return { carrierCallId: row!.carrier_call_id };
  }

  /** Sends the leg's callbacks at their times, with the carrier's duplicates and reorderings. */
  private schedule(row: CallRow, req: PlaceCallRequest, deliver: (cb: StatusCallback) => Promise<void>): void {
    // The lost_callbacks scenario's callbacks stop after ringing: the answer and the end are only
    // learnt by asking the carrier (fetchCall, cancel).
    const all = this.timeline(row, req).events;
    const events = row.scenario === 'lost_callbacks' ? all.filter(({ cb }) => cb.event === 'initiated' || cb.event === 'ringing') : all;
    const random = seeded(`${row.carrier_call_id}:delivery`);
    const chaotic = row.scenario === 'chaotic_callbacks';
    const timers: NodeJS.Timeout[] = [];
    const last = events.at(-1)?.at ?? 0;
    events.forEach(({ at, cb }, i) => {
      // The chaotic scenario delivers the first three events in reverse order, and everything twice.
      const when = chaotic && i < 3 ? SANDBOX_TIMELINE.ringing + 0.5 + (2 - i) * 0.3 : at + random() * this.options.maxDeliveryJitter;
      const copies = chaotic || random() < this.options.duplicateRate ? 2 : 1;
      for (let c = 0; c < copies; c++) {
        const delay = Math.min(when, last + 1) * this.secondMs + c * 0.2 * this.secondMs;
        const t = setTimeout(() => void deliver(cb).catch(() => undefined), delay);
        t.unref();
        timers.push(t);
      }
    });
    this.timers.set(row.carrier_call_id, timers);
  }

  /** The events of a leg (its whole life when not hung up), with their times in call seconds. */
  private timeline(row: CallRow, req?: Pick<PlaceCallRequest, 'callId' | 'legId'>): { events: { at: number; cb: StatusCallback }[]; status: CarrierCallStatus; endAt: number | null; duration: number } {
    const ids = req ?? this.idsOf(row);
    const T = SANDBOX_TIMELINE;
    const hangupAt = row.hung_up_at ? (row.hung_up_at.getTime() - row.placed_at.getTime()) / row.second_ms : Infinity;
    const events: { at: number; cb: StatusCallback }[] = [];
    let seq = 0;
    const add = (at: number, cb: Omit<StatusCallback, 'carrierCallId' | 'callId' | 'legId' | 'sequence'>) => {
      events.push({ at, cb: { carrierCallId: row.carrier_call_id, callId: ids.callId, legId: ids.legId, sequence: ++seq, ...cb } });
    };
    const end = (at: number, callStatus: NonNullable<StatusCallback['callStatus']>, duration = 0, quality?: QualitySample[]) => {
      add(at, { event: 'completed', callStatus, duration, ...(quality ? { quality } : {}) });
      return { events, status: callStatus as CarrierCallStatus, endAt: at, duration };
    };
    if (hangupAt < T.initiated) return end(hangupAt, 'canceled');
    add(T.initiated, { event: 'initiated' });
    if (row.scenario === 'failed') return end(Math.min(T.failedAt, hangupAt), hangupAt < T.failedAt ? 'canceled' : 'failed');
    if (hangupAt < T.ringing) return end(hangupAt, 'canceled');
    add(T.ringing, { event: 'ringing' });
    if (row.scenario === 'busy') return end(Math.min(T.busyAt, hangupAt), hangupAt < T.busyAt ? 'canceled' : 'busy');
    if (row.scenario === 'no_answer') {
      const giveUp = T.ringing + T.carrierRingLimit; // like Twilio's longest timeout, whatever ours is
      return end(Math.min(giveUp, hangupAt), hangupAt < giveUp ? 'canceled' : 'no_answer');
    }
    if (hangupAt < T.answered) return end(hangupAt, 'canceled');
    add(T.answered, { event: 'answered' });
    const endAt = Math.min(T.answered + (row.scenario === 'long_call' ? T.longTalk : T.talk), hangupAt);
    const duration = Math.max(1, Math.round(endAt - T.answered));
    return end(endAt, 'completed', duration, this.samples(row, duration));
  }

  private idsOf(row: CallRow): { callId: string; legId: string } {
    // The idempotency key is `<call id>:<leg id>:dial` (activities/communications).
    const [callId = '', legId = ''] = row.idempotency_key.split(':');
    return { callId, legId };
  }

  /** One sample per 5 s of talk; poor quality for the poor-quality number. */
  private samples(row: CallRow, duration: number): QualitySample[] {
    const random = seeded(`${row.carrier_call_id}:quality`);
    const poor = row.scenario === 'poor_quality';
    const n = Math.max(1, Math.ceil(duration / 5));
    return Array.from({ length: n }, () => ({
      jitter_ms: Math.round((poor ? 40 + random() * 40 : 2 + random() * 6) * 10) / 10,
      packet_loss: Math.round((poor ? 8 + random() * 7 : random() * 0.5) * 100) / 100,
      latency_ms: Math.round(poor ? 300 + random() * 100 : 40 + random() * 40),
    }));
  }

  private async row(carrierCallId: string): Promise<CallRow> {
    const [row] = await this.query<CallRow>('select * from sandbox_telephony_calls where carrier_call_id = $1', [carrierCallId]);
    if (!row) throw new Error(`sandbox carrier: no call ${carrierCallId}`);
    return row;
  }

  private stateAt(row: CallRow, now: number): CarrierCallState {
    const line = this.timeline(row);
    const elapsed = (now - row.placed_at.getTime()) / row.second_ms;
    const happened = line.events.filter((e) => e.at <= elapsed).map((e) => e.cb);
    const lastEvent = happened.at(-1);
    const status: CarrierCallStatus = !lastEvent ? 'queued'
      : lastEvent.event === 'completed' ? lastEvent.callStatus!
        : lastEvent.event === 'answered' ? 'in_progress' : lastEvent.event;
    const done = lastEvent?.event === 'completed';
    return { carrierCallId: row.carrier_call_id, status, duration: done ? line.duration : 0, quality: done ? lastEvent.quality ?? [] : [], events: happened };
  }

  async fetchCall(carrierCallId: string): Promise<CarrierCallState> {
    return this.stateAt(await this.row(carrierCallId), Date.now());
  }

  async hangUp(carrierCallId: string): Promise<CarrierCallState> {
    return this.end(carrierCallId, ['completed']);
  }

  async cancel(carrierCallId: string): Promise<CarrierCallState> {
    return this.end(carrierCallId, ['answered', 'completed']);
  }

  /** Hangs the leg up, unless its last event so far is one of `leaveAfter` (then it is left as it is). */
  private async end(carrierCallId: string, leaveAfter: StatusCallback['event'][]): Promise<CarrierCallState> {
    const now = Date.now();
    const before = this.stateAt(await this.row(carrierCallId), now);
    const last = before.events.at(-1)?.event;
    if (last && leaveAfter.includes(last)) return before;
    for (const t of this.timers.get(carrierCallId) ?? []) clearTimeout(t);
    this.timers.delete(carrierCallId);
    const [row] = await this.query<CallRow>(
      'update sandbox_telephony_calls set hung_up_at = coalesce(hung_up_at, $2) where carrier_call_id = $1 returning *', [carrierCallId, new Date(now)]);
    return this.stateAt(row!, now + 1);
  }

  async fetchRecording(carrierCallId: string): Promise<Buffer | null> {
    const row = await this.row(carrierCallId);
    const state = this.stateAt(row, Date.now());
    if (!row.record || state.status !== 'completed' || state.duration <= 0) return null;
    return toneWav(state.duration / 10);
  }

  nearbyAreaCodes(areaCode: string): string[] {
    if (NEARBY[areaCode]) return NEARBY[areaCode];
    const n = Number(areaCode);
    return [n + 1, n - 1, n + 2].filter((c) => c >= 201 && c <= 989 && String(c) !== SANDBOX_EXHAUSTED_AREA_CODE).map(String);
  }

  async searchNumbers(search: NumberSearch): Promise<string[]> {
    const candidates: string[] = [];
    if (search.numberType === 'local') {
      const ac = search.areaCode ?? '415';
      if (ac === SANDBOX_EXHAUSTED_AREA_CODE) return [];
      for (let i = 0; i < 20; i++) candidates.push(`+1${ac}5550${String(100 + i)}`);
    } else if (search.numberType === 'toll_free') {
      for (const prefix of ['800', '833', '844']) for (let i = 0; i < 10; i++) candidates.push(`+1${prefix}5550${String(100 + i)}`);
    } else {
      const example = search.country ? getExample(search.country, 'fixed-line') : undefined;
      const e164 = example?.valid ? example.number.e164 : undefined;
      if (e164) for (let i = 0; i < 20; i++) candidates.push(`${e164.slice(0, -2)}${String(i).padStart(2, '0')}`);
    }
    return candidates.filter((n) => 'e164' in parseE164(n));
  }

  async buyNumber(req: { number: string; idempotencyKey: string }): Promise<{ reference: string }> {
    return { reference: `PN${createHash('sha256').update(req.idempotencyKey).digest('hex').slice(0, 32)}` };
  }

  async releaseNumber(): Promise<void> {
    // The sandbox's inventory is derived: a released number is available again at once.
  }

  /**
   * Messages: the provider id encodes when it was sent and how it will end, so its status can be
   * asked for from any process: sent at once, delivered after 2 s, read after 5 s (call-time
   * seconds); the undeliverable number fails after 1 s.
   */
  async sendMessage(req: SendMessageRequest): Promise<{ providerMessageId: string }> {
    const fails = req.to === SANDBOX_UNDELIVERABLE ? 'f' : 'd';
    const key = createHash('sha256').update(req.idempotencyKey).digest('hex').slice(0, 12);
    return { providerMessageId: `SM.${Date.now()}.${this.secondMs}.${fails}.${key}` };
  }

  async fetchMessage(providerMessageId: string): Promise<{ status: ProviderMessageStatus; failureCode: string | null }> {
    const [, sentAt, secondMs, outcome] = providerMessageId.split('.');
    const elapsed = (Date.now() - Number(sentAt)) / Number(secondMs);
    if (outcome === 'f') return elapsed >= 1 ? { status: 'failed', failureCode: 'undeliverable' } : { status: 'sent', failureCode: null };
    return { status: elapsed >= 5 ? 'read' : elapsed >= 2 ? 'delivered' : 'sent', failureCode: null };
  }
}
