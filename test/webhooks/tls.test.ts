import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordEvent } from '../../domain/events/outbox.ts';
import { scopedEm } from '../../domain/scope.ts';
import { newId } from '../../platform/ids.ts';
import { startTestPlatform, type TestPlatform } from '../support/platform.ts';
import { eventually } from './support/receiver.ts';

/**
 * A live-mode delivery over https to a receiver with a certificate from a CA made for this test:
 * the worker trusts that CA, resolves the receiver's name to loopback and allows that one address
 * (its webhook transport, a test-only service); private networks stay disallowed.
 */
const HOST = 'receiver.webhooks.test';
const dir = mkdtempSync(join(tmpdir(), 'bp-tls-'));
const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
openssl('req', '-x509', ...ec, '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '1', '-subj', '/CN=Business Platform test CA');
openssl('req', ...ec, '-keyout', 'leaf.key', '-out', 'leaf.csr', '-subj', `/CN=${HOST}`);
writeFileSync(join(dir, 'ext'), `subjectAltName=DNS:${HOST}\n`);
openssl('x509', '-req', '-in', 'leaf.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'leaf.crt', '-days', '1', '-extfile', 'ext');
const ca = readFileSync(join(dir, 'ca.crt'));

interface Got { headers: Record<string, string>; body: string; encrypted: boolean; protocol: string | null; servername: string | false }
const received: Got[] = [];
let server: Server;
let port: number;
let platform: TestPlatform;

beforeAll(async () => {
  server = createServer({ key: readFileSync(join(dir, 'leaf.key')), cert: readFileSync(join(dir, 'leaf.crt')) }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const socket = req.socket as TLSSocket;
      received.push({
        headers: req.headers as Record<string, string>, body: Buffer.concat(chunks).toString(),
        encrypted: socket.encrypted, protocol: socket.getProtocol(), servername: (socket as TLSSocket & { servername: string | false }).servername,
      });
      res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as { port: number }).port;
  platform = await startTestPlatform({
    worker: true,
    env: { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'false', EVENT_DISPATCH_SWEEP_MS: '500' },
    workerServices: {
      webhookTransport: {
        ca,
        resolver: async (name) => (name === HOST ? [{ address: '127.0.0.1', family: 4 }] : []),
        allowAddresses: ['127.0.0.1'],
      },
    },
  });
});
afterAll(async () => {
  await platform?.close();
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

describe('live-mode delivery over TLS', () => {
  it('delivers a signed event over https to a receiver whose certificate the worker trusts', async () => {
    const accountId = await platform.newAccount();
    const endpointId = newId('webhookEndpoint');
    const secret = `whsec_${Buffer.alloc(32, 9).toString('base64')}`;
    // Written directly: the API resolves a live endpoint's name with the system resolver at creation.
    await platform.sql(
      `insert into webhook_endpoints (id, account_id, livemode, url, events, secret, metadata, created_at, updated_at)
       values ($1, $2, true, $3, '{order.fulfilled}', $4, '{}', now(), now())`,
      [endpointId, accountId, `https://${HOST}:${port}/hooks`, secret],
    );
    const em = scopedEm(platform.orm, { accountId, livemode: true });
    const event = recordEvent(em, { accountId, livemode: true }, { type: 'order.fulfilled', object: { id: 'ord_tls', object: 'order' } });
    await em.flush();

    const [got] = await eventually(async () => (received.length ? received : null), 20_000);
    expect(got).toMatchObject({ encrypted: true, protocol: expect.stringMatching(/^TLSv1\.[23]$/), servername: HOST });
    expect(got!.headers['webhook-id']).toBe(event.id);
    // Throws unless the signature over this body verifies with the endpoint's secret.
    expect(new Webhook(secret).verify(got!.body, got!.headers)).toMatchObject({ id: event.id, type: 'order.fulfilled', livemode: true });
    const rows = await eventually(async () => {
      const r = await platform.sql<{ status: string; attempts: number }>('select status, attempts from webhook_deliveries where event_id = $1', [event.id]);
      return r[0]?.status === 'delivered' ? r : null;
    });
    expect(rows).toEqual([{ status: 'delivered', attempts: 1 }]);
  });
});
