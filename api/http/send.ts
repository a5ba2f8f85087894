import type { Response } from 'express';
import { state } from './context.ts';
import { toXml } from './xml.ts';

/**
 * The one place a response body is written. It serialises in the negotiated format and, when the
 * request carries an Idempotency-Key, stores the exact bytes before sending them so a retry gets
 * them back byte for byte.
 */
export async function sendDocument(
  res: Response,
  status: number,
  document: unknown,
  opts: { headers?: Record<string, string>; problem?: boolean } = {},
): Promise<void> {
  const st = state(res);
  const xml = st.format === 'xml';
  const type = opts.problem
    ? (xml ? 'application/problem+xml' : 'application/problem+json')
    : (xml ? 'application/xml' : 'application/json');
  const root = opts.problem ? 'problem' : rootName(document);
  const body = Buffer.from(xml ? toXml(root, document) : JSON.stringify(document));
  const headers: Record<string, string> = { 'Content-Type': `${type}; charset=utf-8`, ...opts.headers };
  if (st.beforeSend) await st.beforeSend(status, headers, body);
  if (st.release) await st.release();
  writeRaw(res, status, headers, body);
}

export function writeRaw(res: Response, status: number, headers: Record<string, string>, body: Buffer | null): void {
  if (res.headersSent) return;
  res.status(status);
  for (const [k, v] of Object.entries(headers)) res.setHeader(k, v);
  if (body === null) res.end();
  else {
    res.setHeader('Content-Length', body.length);
    res.end(body);
  }
}

function rootName(document: unknown): string {
  if (document && typeof document === 'object' && 'object' in document && typeof document.object === 'string') {
    return document.object;
  }
  return 'response';
}
