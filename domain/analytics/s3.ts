import { createHash, createHmac } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { Readable } from 'node:stream';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';

/**
 * The small part of the S3 API that report files need — PUT, GET and DELETE of one object — signed
 * with AWS Signature Version 4 (node:crypto, no SDK), with path-style URLs
 * (`<endpoint>/<bucket>/<key>`), so MinIO, Ceph, R2 and AWS S3 itself all answer it.
 */

export interface S3Settings {
  /** e.g. https://s3.eu-central-1.amazonaws.com or http://minio:9000 */
  endpoint: string;
  bucket: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
}

export const EMPTY_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';

/** RFC 3986 encoding as SigV4 wants it: everything but unreserved characters, `/` kept in paths. */
export function uriEncode(text: string, keepSlash: boolean): string {
  return [...Buffer.from(text, 'utf8')].map((byte) => {
    const c = String.fromCharCode(byte);
    if (/[A-Za-z0-9\-._~]/.test(c) || (keepSlash && c === '/')) return c;
    return `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }).join('');
}

const hmac = (key: Buffer | string, data: string) => createHmac('sha256', key).update(data, 'utf8').digest();
const sha256Hex = (data: string) => createHash('sha256').update(data, 'utf8').digest('hex');

export interface SignInput {
  method: string;
  /** The URI path as sent (already encoded). */
  path: string;
  query: Record<string, string>;
  /** Headers to sign (names any case); must include host, x-amz-date and x-amz-content-sha256. */
  headers: Record<string, string>;
  payloadHash: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
}

/** The SigV4 `Authorization` header value (and its parts, for a verifier). */
export function signV4(input: SignInput): { authorization: string; signature: string; signedHeaders: string; canonicalRequest: string } {
  const amzDate = Object.entries(input.headers).find(([k]) => k.toLowerCase() === 'x-amz-date')?.[1];
  if (!amzDate || !/^\d{8}T\d{6}Z$/.test(amzDate)) throw new Error('x-amz-date (YYYYMMDDTHHMMSSZ) is required');
  const headers = Object.entries(input.headers)
    .map(([k, v]) => [k.toLowerCase(), v.trim().replace(/\s+/g, ' ')] as const)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const signedHeaders = headers.map(([k]) => k).join(';');
  const query = Object.entries(input.query)
    .map(([k, v]) => [uriEncode(k, false), uriEncode(v, false)] as const)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([k, v]) => `${k}=${v}`).join('&');
  const canonicalRequest = [
    input.method.toUpperCase(), input.path, query, ...headers.map(([k, v]) => `${k}:${v}`), '', signedHeaders, input.payloadHash,
  ].join('\n');
  const day = amzDate.slice(0, 8);
  const scope = `${day}/${input.region}/s3/aws4_request`;
  const stringToSign = ['AWS4-HMAC-SHA256', amzDate, scope, sha256Hex(canonicalRequest)].join('\n');
  const key = hmac(hmac(hmac(hmac(`AWS4${input.secretAccessKey}`, day), input.region), 's3'), 'aws4_request');
  const signature = createHmac('sha256', key).update(stringToSign, 'utf8').digest('hex');
  return {
    authorization: `AWS4-HMAC-SHA256 Credential=${input.accessKeyId}/${scope}, SignedHeaders=${signedHeaders}, Signature=${signature}`,
    signature, signedHeaders, canonicalRequest,
  };
}

/** An S3 answer other than success: `status` 0 when the store could not be reached. */
export class S3Error extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

async function fileSha256(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

export class S3Store {
  private readonly settings: S3Settings;
  private readonly now: () => Date;

  constructor(settings: S3Settings, now: () => Date = () => new Date()) {
    this.settings = settings;
    this.now = now;
  }

  private async send(method: 'PUT' | 'GET' | 'DELETE', key: string, opts: { payloadHash?: string; body?: Readable; length?: number; contentType?: string } = {}): Promise<Response> {
    const base = new URL(this.settings.endpoint);
    const path = `${base.pathname.replace(/\/$/, '')}/${uriEncode(this.settings.bucket, false)}/${uriEncode(key, true)}`;
    const amzDate = this.now().toISOString().replace(/[-:]/g, '').replace(/\.\d{3}/, '');
    const headers: Record<string, string> = {
      host: base.host, 'x-amz-date': amzDate, 'x-amz-content-sha256': opts.payloadHash ?? EMPTY_SHA256,
      ...(opts.contentType ? { 'content-type': opts.contentType } : {}),
    };
    const signed = signV4({
      method, path, query: {}, headers, payloadHash: headers['x-amz-content-sha256']!, region: this.settings.region,
      accessKeyId: this.settings.accessKeyId, secretAccessKey: this.settings.secretAccessKey,
    });
    const { host: _host, ...sent } = headers;
    const init: RequestInit & { duplex?: 'half' } = {
      method,
      headers: { ...sent, authorization: signed.authorization, ...(opts.length !== undefined ? { 'content-length': String(opts.length) } : {}) },
      signal: AbortSignal.timeout(30_000),
    };
    if (opts.body) {
      init.body = Readable.toWeb(opts.body) as unknown as RequestInit['body'];
      init.duplex = 'half';
    }
    try {
      return await fetch(`${base.origin}${path}`, init);
    } catch (err) {
      throw new S3Error(0, `S3 store unreachable: ${(err as Error).message}`);
    }
  }

  private static async fail(res: Response, what: string): Promise<never> {
    const text = await res.text().catch(() => '');
    const code = /<Code>([^<]+)<\/Code>/.exec(text)?.[1] ?? res.statusText;
    throw new S3Error(res.status, `S3 ${what} answered ${res.status} ${code}`);
  }

  /** Uploads a local file as `key` (hashed first, then streamed: memory stays bounded). */
  async putFile(key: string, path: string, contentType: string): Promise<number> {
    const size = (await stat(path)).size;
    const payloadHash = await fileSha256(path);
    const res = await this.send('PUT', key, { payloadHash, body: createReadStream(path), length: size, contentType });
    if (!res.ok) await S3Store.fail(res, `PUT ${key}`);
    await res.arrayBuffer();
    return size;
  }

  /** The object as a stream; null when it does not exist (a missing bucket is an error: the configuration is wrong). */
  async get(key: string): Promise<{ stream: Readable; size: number } | null> {
    const res = await this.send('GET', key);
    if (res.status === 404) {
      const text = await res.text();
      if (/<Code>NoSuchKey<\/Code>/.test(text) || !text) return null;
      throw new S3Error(404, `S3 GET ${key} answered 404 ${/<Code>([^<]+)<\/Code>/.exec(text)?.[1] ?? 'Not Found'}`);
    }
    if (!res.ok || !res.body) await S3Store.fail(res, `GET ${key}`);
    return { stream: Readable.fromWeb(res.body as WebReadableStream), size: Number(res.headers.get('content-length') ?? 0) };
  }

  /** Deletes `key` (S3 answers 204 whether or not it existed). */
  async delete(key: string): Promise<void> {
    const res = await this.send('DELETE', key);
    if (!res.ok && res.status !== 404) await S3Store.fail(res, `DELETE ${key}`);
    await res.arrayBuffer();
  }
}
