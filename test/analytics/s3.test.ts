import { existsSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { removeReportFiles } from '../../domain/analytics/reports.ts';
import { EMPTY_SHA256, S3Error, S3Store, signV4 } from '../../domain/analytics/s3.ts';
import type { TestPlatform } from '../support/platform.ts';
import { usePlatform, type Http } from '../support/use-platform.ts';
import { startSandboxS3 } from './sandbox-s3.ts';
import { Fixtures } from './support.ts';

/**
 * Report files in an S3-compatible store: the SigV4 signer against AWS's published example, the
 * store against the sandbox S3 server (which checks every signature), and a report rendered by a
 * real worker, uploaded, downloaded through its key-less signed link and deleted.
 */

const s3 = await startSandboxS3();
const dir = mkdtempSync(join(tmpdir(), 'bp-reports-s3-'));
let platform: TestPlatform;
let http: Http;
let key: string;
let accountId: string;

usePlatform({
  worker: true, ownAccount: true,
  env: {
    ANALYTICS_REPORTS_DIR: dir, ANALYTICS_S3_ENDPOINT: s3.url, ANALYTICS_S3_BUCKET: s3.bucket, ANALYTICS_S3_REGION: 'us-east-1',
    ANALYTICS_S3_ACCESS_KEY_ID: s3.accessKeyId, ANALYTICS_S3_SECRET_ACCESS_KEY: s3.secretAccessKey, RATE_LIMIT_PER_MINUTE: '10000',
  },
}, (t) => ({ platform, http, key, accountId } = t));

afterAll(() => s3.close());

const settings = () => ({ endpoint: s3.url, bucket: s3.bucket, region: 'us-east-1', accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey });

describe('AWS Signature Version 4', () => {
  it('signs AWS\'s documented GET Object example to its published signature', () => {
    // docs.aws.amazon.com/AmazonS3/latest/API/sig-v4-header-based-auth.html, "Example: GET Object".
    const signed = signV4({
      method: 'GET', path: '/test.txt', query: {}, payloadHash: EMPTY_SHA256, region: 'us-east-1',
      headers: { Host: 'examplebucket.s3.amazonaws.com', Range: 'bytes=0-9', 'x-amz-content-sha256': EMPTY_SHA256, 'x-amz-date': '20130524T000000Z' },
      accessKeyId: 'AKIAIOSFODNN7EXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
    });
    expect(signed.signature).toBe('f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41');
    expect(signed.authorization).toBe('AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, '
      + 'SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41');
  });
});

describe('the S3 store against the sandbox S3 server', () => {
  it('puts, gets and deletes an object, keys with spaces and unicode included', async () => {
    const store = new S3Store(settings());
    const path = join(dir, 'probe.csv');
    writeFileSync(path, 'a,b\r\n1,"x, y"\r\n');
    const objectKey = 'acct_x/Ümlaut report 1.csv';
    expect(await store.putFile(objectKey, path, 'text/csv; charset=utf-8')).toBe(15);
    expect(s3.objects.get(objectKey)?.contentType).toBe('text/csv; charset=utf-8');
    const got = await store.get(objectKey);
    const chunks: Buffer[] = [];
    for await (const c of got!.stream) chunks.push(c as Buffer);
    expect([got!.size, Buffer.concat(chunks).toString('utf8')]).toEqual([15, 'a,b\r\n1,"x, y"\r\n']);
    await store.delete(objectKey);
    expect(s3.objects.has(objectKey)).toBe(false);
    expect(await store.get(objectKey)).toBeNull();
  });

  it('is refused by the server with a wrong secret, a skewed clock or another bucket', async () => {
    const path = join(dir, 'probe2.csv');
    writeFileSync(path, 'x');
    const wrong = new S3Store({ ...settings(), secretAccessKey: 'not-the-secret' });
    await expect(wrong.putFile('k', path, 'text/csv')).rejects.toMatchObject({ status: 403, message: expect.stringMatching(/SignatureDoesNotMatch/) });
    const skewed = new S3Store(settings(), () => new Date(Date.now() - 3600_000));
    await expect(skewed.get('k')).rejects.toMatchObject({ status: 403, message: expect.stringMatching(/RequestTimeTooSkewed/) });
    const otherBucket = new S3Store({ ...settings(), bucket: 'elsewhere' });
    await expect(otherBucket.get('k')).rejects.toBeInstanceOf(S3Error);
    await expect(otherBucket.get('k')).rejects.toMatchObject({ status: 404, message: expect.stringMatching(/NoSuchBucket/) });
    expect(s3.objects.has('k')).toBe(false);
  });
});

describe('reports stored in S3', () => {
  beforeAll(async () => {
    const fx = new Fixtures(platform, accountId);
    const c = await fx.customer('2025-01-01T00:00:00Z', 'Ada');
    const store = await fx.store();
    for (let d = 1; d <= 5; d++) await fx.order(store, c, 1000 * d, 'USD', `2025-03-0${d}T10:00:00Z`, { units: d });
  });

  it('uploads the rendered file, serves it through the key-less signed link, and deletes it', async () => {
    const res = await http('/v3/analytics/reports/generate', { key, body: { report_type: 'sales', format: 'csv', date_range: { start: '2025-03-01', end: '2025-03-31' } } });
    expect(res.status, res.text).toBe(202);
    const id: string = res.body.id;
    let done: any;
    for (const deadline = Date.now() + 30_000; ;) {
      done = (await http(`/v3/analytics/reports/${id}`, { key })).body;
      if (['succeeded', 'failed', 'canceled'].includes(done.status)) break;
      if (Date.now() > deadline) throw new Error(`report ${id} did not finish: ${JSON.stringify(done)}`);
      await new Promise((r) => setTimeout(r, 150));
    }
    expect(done).toMatchObject({ status: 'succeeded', row_count: 5 });
    const object = s3.objects.get(`${accountId}/${id}.csv`);
    expect(object?.contentType).toBe('text/csv; charset=utf-8');
    // Nothing left on the local disk: the store holds the only copy.
    expect(existsSync(join(dir, accountId)) ? readdirSync(join(dir, accountId)).filter((n) => n.startsWith(id)) : []).toEqual([]);

    const file = await fetch(platform.url + done.download_url);
    const text = Buffer.from(await file.arrayBuffer());
    expect([file.status, file.headers.get('content-type'), file.headers.get('content-disposition')])
      .toEqual([200, 'text/csv; charset=utf-8', `attachment; filename="${id}.csv"`]);
    expect(text.equals(object!.body)).toBe(true);
    expect(text.toString('utf8').split('\r\n')).toHaveLength(7); // header, 5 rows, final CRLF

    s3.down = true;
    const down = await http(done.download_url);
    s3.down = false;
    expect([down.status, down.body.code, down.headers.get('retry-after')]).toEqual([503, 'service_unavailable', '5']);

    await removeReportFiles({ ANALYTICS_REPORTS_DIR: dir, ...envStore() }, accountId, id);
    expect(s3.objects.has(`${accountId}/${id}.csv`)).toBe(false);
    const gone = await http(done.download_url);
    expect([gone.status, gone.body.code]).toEqual([410, 'report_expired']);
  });
});

function envStore() {
  return {
    ANALYTICS_S3_ENDPOINT: s3.url, ANALYTICS_S3_BUCKET: s3.bucket, ANALYTICS_S3_REGION: 'us-east-1',
    ANALYTICS_S3_ACCESS_KEY_ID: s3.accessKeyId, ANALYTICS_S3_SECRET_ACCESS_KEY: s3.secretAccessKey,
  };
}
