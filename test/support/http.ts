/** A thin fetch wrapper for tests: JSON in, status + headers + parsed body out. */
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
    const res = await fetch(baseUrl + path, { method: opts.method ?? (body ? 'POST' : 'GET'), headers, body });
    const text = await res.text();
    let parsed: unknown = text;
    if ((res.headers.get('content-type') ?? '').includes('json') && text) parsed = JSON.parse(text);
    return { status: res.status, headers: res.headers, text, body: parsed as T };
  };
}
