import { expect } from 'vitest';
import type { Http } from '../support/use-platform.ts';

/** The sandbox carrier's test numbers (docs/communications.md). */
export const TO = {
  answered: '+14155550123',
  other: '+14155550199',
  busy: '+15005550001',
  noAnswer: '+15005550002',
  failed: '+15005550003',
  poorQuality: '+15005550004',
  chaotic: '+15005550005',
  longCall: '+15005550006',
  lostCallbacks: '+15005550007',
} as const;

/** Rents a number with the given features and returns it (E.164). */
export async function provision(http: Http, key: string, features: string[] = ['voice', 'sms'], areaCode = '415'): Promise<{ id: string; number: string; inbound_secret: string }> {
  const res = await http('/v3/communications/numbers/provision', { key, body: { number_type: 'local', area_code: areaCode, features } });
  expect(res.status, res.text).toBe(201);
  return res.body;
}

/**
 * Polls a resource until `done` holds (workflows finish on the sandbox carrier's compressed time),
 * soon at first and then every half second: a long wait (a worker's crash recovered) must not spend
 * the key's 100 requests a minute.
 */
export async function waitFor(http: Http, key: string, path: string, done: (body: any) => boolean, timeoutMs = 30_000): Promise<any> {
  const deadline = Date.now() + timeoutMs;
  for (let pause = 50; ; pause = Math.min(500, pause * 1.5)) {
    const res = await http(path, { key });
    expect(res.status, res.text).toBe(200);
    if (done(res.body)) return res.body;
    if (Date.now() > deadline) throw new Error(`${path} did not reach the expected state; last: ${res.text}`);
    await new Promise((r) => setTimeout(r, pause));
  }
}

export const ENDED = new Set(['completed', 'busy', 'no_answer', 'failed', 'canceled']);
export const waitForCall = (http: Http, key: string, id: string, done: (c: any) => boolean = (c) => ENDED.has(c.status), timeoutMs?: number) =>
  waitFor(http, key, `/v3/communications/calls/${id}`, done, timeoutMs);

/**
 * Resources of every communications id parameter, for test/api/isolation.test.ts: each one settled
 * (the call completed with its recording ready, the message read), so reads do not change between
 * two snapshots.
 */
export function communicationsFactories(http: () => Http, owner: () => string): Record<string, (ids: Record<string, string>) => Promise<string>> {
  let number = '';
  const create = async (path: string, body: unknown) => {
    const res = await http()(path, { key: owner(), body });
    expect(res.status, res.text).toBe(201);
    return res.body.id as string;
  };
  return {
    number_id: async () => {
      const n = await provision(http(), owner(), ['voice', 'sms']);
      number = n.number;
      return n.id;
    },
    call_id: async () => {
      const id = await create('/v3/communications/calls', { to_number: TO.answered, from_number: number, record_call: true });
      await waitForCall(http(), owner(), id, (c) => c.recording?.status === 'ready');
      return id;
    },
    pbx_id: async () => create('/v3/communications/pbx', { name: 'Isolation PBX' }),
    extension_id: async (ids) => create(`/v3/communications/pbx/${ids.pbx_id}/extensions`, { extension: '101' }),
    message_id: async () => {
      const id = await create('/v3/communications/sms/send', { to: TO.answered, from: number, text: 'Isolation' });
      await waitFor(http(), owner(), `/v3/communications/messages/${id}`, (m) => m.status === 'read');
      return id;
    },
  };
}
