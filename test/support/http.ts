import { contractFor } from './contract.ts';

/**
 * A thin fetch wrapper for tests: JSON in, status + headers + parsed body out. Every response to a
 * route the OpenAPI document lists is checked against it (status, media type, body schema); a
 * mismatch fails the request with the path, status and validation errors (see contract.ts).
 */
export interface HttpResult<T = any> {
  status: number;
  headers: Headers;
  text: string;
  body: T;
}

export interface HttpOptions {
  method?: string;
  key?: string;
  body?: unknown;
  /** Sent as-is (not JSON-encoded). */
  rawBody?: string;
  headers?: Record<string, string>;
}

export function client(baseUrl: string) {
  return async function http<T = any>(path: string, opts: HttpOptions = {}): Promise<HttpResult<T>> {
    const headers: Record<string, string> = { ...opts.headers };
    if (opts.key) headers.authorization = `Bearer ${opts.key}`;
    let body: string | undefined = opts.rawBody;
    if (opts.body !== undefined) {
      body = JSON.stringify(opts.body);
      headers['content-type'] ??= 'application/json';
    }
    const method = opts.method ?? (body ? 'POST' : 'GET');
    const res = await fetch(baseUrl + path, { method, headers, body });
    const text = await res.text();
    (await contractFor(baseUrl)).check(method, path, res.status, res.headers.get('content-type'), text);
    let parsed: unknown = text;
    if ((res.headers.get('content-type') ?? '').includes('json') && text) parsed = JSON.parse(text);
    return { status: res.status, headers: res.headers, text, body: parsed as T };
  };
}
