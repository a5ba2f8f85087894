import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { eventCatalog } from '../../domain/registry.ts';
import { classifyAddress, checkUrl, resolveDestination, DestinationRefused } from '../../domain/webhooks/destination.ts';
import { nextRetryAt, parseDuration, retryPolicy } from '../../domain/webhooks/retry-schedule.ts';
import { parseRetryAfter } from '../../domain/webhooks/sender.ts';
import { generateSecret, secretProblem, signatureHeaders } from '../../domain/webhooks/signing.ts';
import { loadConfig } from '../../platform/config.ts';
import { deliveryWorkflowId } from '../../workflows/webhooks/shared.ts';

describe('the retry schedule', () => {
  const policy = retryPolicy(loadConfig({}));
  const first = new Date('2025-03-14T00:00:00Z');

  it('is the documented default: 10 retries over 23 h 42 min 35 s, inside the 24-hour window', () => {
    expect(policy.scheduleMs).toEqual(['5s', '30s', '2m', '10m', '30m', '1h', '2h', '4h', '8h', '8h'].map(parseDuration));
    const total = policy.scheduleMs.reduce((a, b) => a + b, 0);
    expect(total).toBe(((23 * 60 + 42) * 60 + 35) * 1000);
    expect(policy.windowMs).toBe(24 * 3600_000);
    expect(policy.jitter).toBe(0.2);
  });

  it('grows roughly exponentially, jittered by at most ±20 %', () => {
    for (let i = 0; i < policy.scheduleMs.length; i++) {
      const nominal = policy.scheduleMs[i]!;
      const now = new Date(first.getTime() + 1000);
      const low = nextRetryAt({ policy, retryIndex: i, firstAttemptAt: now, now, retryAfterMs: null, random: 0 })!;
      const high = nextRetryAt({ policy, retryIndex: i, firstAttemptAt: now, now, retryAfterMs: null, random: 0.999999 })!;
      expect(low.getTime() - now.getTime()).toBe(Math.round(nominal * 0.8));
      expect(high.getTime() - now.getTime()).toBeCloseTo(nominal * 1.2, -2);
    }
  });

  it('gives up after the last retry, and never schedules past the window', () => {
    expect(nextRetryAt({ policy, retryIndex: 10, firstAttemptAt: first, now: first, retryAfterMs: null, random: 0.5 })).toBeNull();
    const late = new Date(first.getTime() + 20 * 3600_000);
    const clamped = nextRetryAt({ policy, retryIndex: 8, firstAttemptAt: first, now: late, retryAfterMs: null, random: 0.5 })!;
    expect(clamped.getTime()).toBe(first.getTime() + 24 * 3600_000);
    const over = new Date(first.getTime() + 24 * 3600_000);
    expect(nextRetryAt({ policy, retryIndex: 9, firstAttemptAt: first, now: over, retryAfterMs: null, random: 0.5 })).toBeNull();
  });

  it('waits for a longer Retry-After, not for a shorter one', () => {
    const at = nextRetryAt({ policy, retryIndex: 0, firstAttemptAt: first, now: first, retryAfterMs: 120_000, random: 0.5 })!;
    expect(at.getTime() - first.getTime()).toBe(120_000);
    const short = nextRetryAt({ policy, retryIndex: 3, firstAttemptAt: first, now: first, retryAfterMs: 1000, random: 0.5 })!;
    expect(short.getTime() - first.getTime()).toBe(600_000);
  });

  it('reads Retry-After as seconds or as an HTTP date', () => {
    expect(parseRetryAfter('120')).toBe(120_000);
    const now = Date.parse('2025-03-14T00:00:00Z');
    expect(parseRetryAfter('Fri, 14 Mar 2025 00:01:00 GMT', now)).toBe(60_000);
    expect(parseRetryAfter('soon')).toBeNull();
    expect(parseRetryAfter(undefined)).toBeNull();
  });
});

describe('Standard Webhooks signatures', () => {
  it('verify with the independent standardwebhooks library, for generated and chosen secrets', () => {
    for (const secret of [generateSecret(), `whsec_${Buffer.alloc(64, 9).toString('base64')}`]) {
      const body = JSON.stringify({ id: 'evt_1', type: 'order.created', data: { object: { note: 'ünïcødé' } } });
      const ts = Math.floor(Date.now() / 1000);
      const headers = signatureHeaders([secret], 'evt_1', ts, body);
      expect(new Webhook(secret).verify(body, headers)).toEqual(JSON.parse(body));
      expect(() => new Webhook(secret).verify(body.replace('order', 'odder'), headers)).toThrow();
    }
  });

  it('carry one signature per secret during a rotation, each verifying alone', () => {
    const [a, b] = [generateSecret(), generateSecret()];
    const headers = signatureHeaders([b, a], 'evt_2', Math.floor(Date.now() / 1000), '{}');
    expect(headers['webhook-signature']!.split(' ')).toHaveLength(2);
    expect(() => new Webhook(a).verify('{}', headers)).not.toThrow();
    expect(() => new Webhook(b).verify('{}', headers)).not.toThrow();
    expect(() => new Webhook(generateSecret()).verify('{}', headers)).toThrow();
  });

  it('generates whsec_ secrets of 32 random bytes and checks chosen ones', () => {
    const s = generateSecret();
    expect(Buffer.from(s.slice(6), 'base64')).toHaveLength(32);
    expect(secretProblem(s)).toBeNull();
    expect(secretProblem(`whsec_${Buffer.alloc(23).toString('base64')}`)).toContain('24–64');
    expect(secretProblem(`whsec_${Buffer.alloc(65).toString('base64')}`)).toContain('24–64');
    expect(secretProblem('whsec_not*base64')).toContain('base64');
    expect(secretProblem(Buffer.alloc(32).toString('base64'))).toContain('whsec_');
  });
});

describe('the SSRF guard', () => {
  it.each([
    ['127.0.0.1', 'loopback'], ['127.255.0.9', 'loopback'], ['::1', 'loopback'], ['::ffff:127.0.0.1', 'loopback'],
    ['169.254.169.254', 'link_local'], ['fe80::1', 'link_local'], ['::ffff:169.254.169.254', 'link_local'],
    ['10.0.0.1', 'private'], ['172.16.5.4', 'private'], ['192.168.1.1', 'private'], ['100.64.0.1', 'private'], ['fd00::1', 'private'],
    ['0.0.0.0', 'reserved'], ['224.0.0.1', 'reserved'], ['::', 'reserved'], ['64:ff9b::7f00:1', 'reserved'], ['2002:7f00:1::', 'reserved'],
    ['93.184.215.14', 'public'], ['2606:4700::1111', 'public'], ['172.32.0.1', 'public'],
    // IPv4-mapped in hexadecimal (how the URL parser writes [::ffff:127.0.0.1]) and in full: judged as the IPv4 address.
    ['::ffff:7f00:1', 'loopback'], ['0:0:0:0:0:ffff:a00:1', 'private'], ['::FFFF:A9FE:A9FE', 'link_local'],
    ['::ffff:c0a8:101', 'private'], ['::ffff:5db8:d70e', 'public'], ['[::ffff:7f00:1]', 'loopback'],
    // NAT64 and 6to4: public only when the IPv4 address they carry is.
    ['64:ff9b::a00:1', 'reserved'], ['64:ff9b::10.0.0.1', 'reserved'], ['64:ff9b::a9fe:a9fe', 'reserved'], ['64:ff9b::5db8:d70e', 'public'],
    ['2002:c0a8:101::1', 'reserved'], ['2002:a9fe:a9fe:1::', 'reserved'], ['2002:5db8:d70e::1', 'public'],
    // Teredo, IPv4-translated, local-use NAT64.
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'reserved'], ['2001::1', 'reserved'], ['::ffff:0:7f00:1', 'reserved'], ['64:ff9b:1::a00:1', 'reserved'],
    ['2001:4860:4860::8888', 'public'],
  ])('classifies %s as %s', (ip, cls) => {
    expect(classifyAddress(ip)).toBe(cls);
  });

  const live = { livemode: true, allowPrivateNetworks: true };
  const devTest = { livemode: false, allowPrivateNetworks: true };
  const strictTest = { livemode: false, allowPrivateNetworks: false };

  it('refuses every non-public address in live mode, even with the server setting on', async () => {
    const resolver = async () => [{ address: '10.0.0.7', family: 4 as const }];
    await expect(resolveDestination(new URL('https://internal.example.com/'), live, resolver)).rejects.toThrow(/private-network/);
    await expect(resolveDestination(new URL('https://internal.example.com/'), devTest, resolver)).resolves.toEqual([{ address: '10.0.0.7', family: 4 }]);
    await expect(resolveDestination(new URL('https://internal.example.com/'), strictTest, resolver)).rejects.toThrow(DestinationRefused);
    expect(() => checkUrl('http://example.com/', live)).toThrow(/https/);
    expect(() => checkUrl('http://example.com/', strictTest)).toThrow(/https/);
    expect(checkUrl('http://127.0.0.1:3000/', devTest).port).toBe('3000');
  });

  it('refuses a name when any of its addresses is forbidden (a round-robin record cannot slip one in)', async () => {
    const resolver = async () => [{ address: '93.184.215.14', family: 4 as const }, { address: '169.254.169.254', family: 4 as const }];
    await expect(resolveDestination(new URL('https://mixed.example.com/'), live, resolver)).rejects.toThrow(/link-local/);
  });

  it('refuses IPv4-mapped, NAT64 and 6to4 literals that carry a private IPv4 address, whatever their spelling', async () => {
    for (const url of ['https://[::ffff:127.0.0.1]/', 'https://[::ffff:a9fe:a9fe]/', 'https://[64:ff9b::a00:1]/', 'https://[2002:c0a8:101::]/', 'https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/']) {
      expect(() => checkUrl(url, live), url).toThrow(DestinationRefused);
    }
    expect(() => checkUrl('http://[::ffff:169.254.169.254]/', devTest)).toThrow(/link-local/);
    const resolver = async () => [{ address: '::ffff:a00:7', family: 6 as const }];
    await expect(resolveDestination(new URL('https://mapped.example.com/'), live, resolver)).rejects.toThrow(/private-network/);
  });

  it('resolves localhost through the system resolver and refuses it in live mode', async () => {
    await expect(resolveDestination(new URL('https://localhost/'), live)).rejects.toThrow(/loopback/);
  });
});

describe('the event catalog', () => {
  it('has the spec kinds and those of the other areas, each with an example', () => {
    const types = eventCatalog.types;
    for (const t of ['subscription.created', 'payment.succeeded', 'order.fulfilled', 'customer.updated', 'order.fulfillment.delayed',
      'subscription.paused', 'subscription.resumed', 'subscription.canceled', 'invoice.created', 'invoice.paid', 'invoice.payment_failed',
      'payment.failed', 'payment.refunded', 'order.created', 'inventory.low_stock']) {
      expect(types).toContain(t);
    }
    expect(new Set(types).size).toBe(types.length);
    for (const k of eventCatalog.kinds) {
      // The example is what the resource's own schema (the one its routes answer with) accepts.
      expect(k.schema.safeParse(k.example).error, k.type).toBeUndefined();
    }
    expect(eventCatalog.get('customer.updated')?.aboutCustomer).toBe(true);
  });

  it('names delivery workflows webhook-delivery-evt_…-whk_…', () => {
    const id = deliveryWorkflowId('evt_01jpa7m4x0f3qv8r2k6n9t5w1c', 'whk_01jpa83q7s9v1x3z5b7d9f1h3k');
    expect(id).toBe('webhook-delivery-evt_01jpa7m4x0f3qv8r2k6n9t5w1c-whk_01jpa83q7s9v1x3z5b7d9f1h3k');
  });
});

describe('docs/events.md', () => {
  it('is generated from the current catalog (run scripts/events-doc.ts after changing the catalog)', async () => {
    const { readFileSync } = await import('node:fs');
    const { renderEventsDoc, EVENTS_DOC_PATH } = await import('../../scripts/events-doc.ts');
    expect(readFileSync(EVENTS_DOC_PATH, 'utf8'), 'docs/events.md is stale: run scripts/node24.sh node scripts/events-doc.ts').toBe(renderEventsDoc());
  });
});

describe('the sender', () => {
  it('retries once on a fresh connection when a pooled keep-alive connection was closed under it', async () => {
    const { createServer } = await import('node:net');
    const { sendWebhook } = await import('../../domain/webhooks/sender.ts');
    let connections = 0;
    // Answers the first request on each connection with a keep-alive 200, then resets the
    // connection when a second request arrives on it (a receiver that closed an idle socket).
    const server = createServer((socket) => {
      connections++;
      let answered = false;
      socket.on('data', () => {
        if (answered) {
          socket.resetAndDestroy();
          return;
        }
        answered = true;
        socket.write('HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: keep-alive\r\n\r\nok');
      });
      socket.on('error', () => undefined);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/hooks`;
    const send = () => sendWebhook({ url, body: '{}', headers: {}, timeoutMs: 2000, policy: { livemode: false, allowPrivateNetworks: true } });
    try {
      expect((await send()).outcome).toBe('delivered');
      const second = await send();
      expect(second).toMatchObject({ outcome: 'delivered', httpStatus: 200 });
      expect(connections).toBe(2);
    } finally {
      server.close();
    }
  });

  it('never connects to a refused destination and bounds DNS by the attempt timeout', async () => {
    const { sendWebhook } = await import('../../domain/webhooks/sender.ts');
    const refused = await sendWebhook({ url: 'http://127.0.0.1:9/x', body: '{}', headers: {}, timeoutMs: 1000, policy: { livemode: true, allowPrivateNetworks: true } });
    expect(refused.outcome).toBe('refused');
    const slowDns = await sendWebhook({
      url: 'https://slow.example.com/x', body: '{}', headers: {}, timeoutMs: 200, policy: { livemode: true, allowPrivateNetworks: false },
      resolver: () => new Promise(() => undefined),
    });
    expect(slowDns).toMatchObject({ outcome: 'timeout' });
    expect(slowDns.error).toContain('DNS');
  });
});
