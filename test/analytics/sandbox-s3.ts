import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { signV4 } from '../../domain/analytics/s3.ts';

/**
 * A sandbox S3-compatible server (the outside world, in process): path-style PUT, GET and DELETE of
 * objects kept in memory, each request's AWS Signature V4 checked against the one secret it knows.
 *
 * Scenarios (documented for tests): a wrong secret or a changed header → 403 SignatureDoesNotMatch;
 * a body whose SHA-256 is not `x-amz-content-sha256` → 400 XAmzContentSHA256Mismatch; an
 * `x-amz-date` more than 15 minutes off → 403 RequestTimeTooSkewed; another bucket → 404
 * NoSuchBucket; a missing key → 404 NoSuchKey; `down = true` → every request 503.
 */
export interface SandboxS3 {
  url: string;
  bucket: string;
  accessKeyId: string;
  secretAccessKey: string;
  objects: Map<string, { body: Buffer; contentType: string | undefined }>;
  /** Every request seen: method, key, status. */
  log: { method: string; key: string; status: number }[];
  down: boolean;
  close(): Promise<void>;
}

const xmlError = (res: ServerResponse, status: number, code: string) => {
  res.writeHead(status, { 'content-type': 'application/xml' });
  res.end(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>${code}</Code></Error>`);
};

async function bodyOf(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

export async function startSandboxS3(opts: { bucket?: string; region?: string } = {}): Promise<SandboxS3> {
  const bucket = opts.bucket ?? 'reports';
  const region = opts.region ?? 'us-east-1';
  const state: Omit<SandboxS3, 'url' | 'close'> = {
    bucket, accessKeyId: 'AKIASANDBOX000000001', secretAccessKey: 'sandbox/secret/key+0123456789abcdefghijkl', objects: new Map(), log: [], down: false,
  };
  const server = createServer((req, res) => {
    void (async () => {
      const url = new URL(req.url ?? '/', 'http://sandbox');
      const [, b, ...rest] = url.pathname.split('/');
      const key = decodeURIComponent(rest.join('/'));
      const answer = (status: number, code?: string, body?: Buffer, headers: Record<string, string> = {}) => {
        state.log.push({ method: req.method ?? '', key, status });
        if (code) return xmlError(res, status, code);
        res.writeHead(status, headers);
        res.end(body);
      };
      const body = await bodyOf(req);
      if (state.down) return answer(503, 'ServiceUnavailable');
      // The signature, recomputed from what arrived.
      const auth = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/s3\/aws4_request, SignedHeaders=([a-z0-9;-]+), Signature=([0-9a-f]{64})$/
        .exec(req.headers.authorization ?? '');
      if (!auth || auth[1] !== state.accessKeyId || auth[3] !== region) return answer(403, 'InvalidAccessKeyId');
      const amzDate = String(req.headers['x-amz-date'] ?? '');
      const at = Date.parse(amzDate.replace(/^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/, '$1-$2-$3T$4:$5:$6Z'));
      if (!Number.isFinite(at) || Math.abs(Date.now() - at) > 15 * 60_000 || amzDate.slice(0, 8) !== auth[2]) return answer(403, 'RequestTimeTooSkewed');
      const signedNames = auth[4]!.split(';');
      if (!['host', 'x-amz-date', 'x-amz-content-sha256'].every((h) => signedNames.includes(h))) return answer(403, 'SignatureDoesNotMatch');
      const headers = Object.fromEntries(signedNames.map((h) => [h, String(req.headers[h] ?? '')]));
      const payloadHash = String(req.headers['x-amz-content-sha256'] ?? '');
      const expected = signV4({
        method: req.method ?? 'GET', path: url.pathname, query: Object.fromEntries(url.searchParams), headers, payloadHash, region,
        accessKeyId: state.accessKeyId, secretAccessKey: state.secretAccessKey,
      });
      if (expected.signature !== auth[5]) return answer(403, 'SignatureDoesNotMatch');
      if (payloadHash !== 'UNSIGNED-PAYLOAD' && createHash('sha256').update(body).digest('hex') !== payloadHash) return answer(400, 'XAmzContentSHA256Mismatch');
      if (b !== state.bucket) return answer(404, 'NoSuchBucket');
      if (req.method === 'PUT') {
        state.objects.set(key, { body, contentType: req.headers['content-type'] });
        return answer(200, undefined, Buffer.alloc(0), { etag: `"${createHash('md5').update(body).digest('hex')}"` });
      }
      if (req.method === 'GET') {
        const o = state.objects.get(key);
        if (!o) return answer(404, 'NoSuchKey');
        return answer(200, undefined, o.body, { 'content-type': o.contentType ?? 'application/octet-stream', 'content-length': String(o.body.length) });
      }
      if (req.method === 'DELETE') {
        state.objects.delete(key);
        return answer(204);
      }
      return answer(405, 'MethodNotAllowed');
    })().catch(() => xmlError(res, 500, 'InternalError'));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return Object.assign(state, {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  });
}
