import { ApiError } from '../../platform/errors.ts';

export type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';

/** What a route table needs of a route: its method and its OpenAPI-style path (`/v3/customers/{customer_id}`). */
export interface KnownRoute {
  method: Method;
  path: string;
}

interface Compiled<R> {
  route: R;
  /** Lowercased static segments; null where the template has a `{param}`. */
  segments: (string | null)[];
  params: string[];
}

export interface RouteMatch<R> {
  route: R;
  params: Record<string, string>;
}

/**
 * Matches request paths against route templates, as Express would (static segments compared
 * case-insensitively, an optional trailing slash, parameters percent-decoded) but in one lookup by
 * method and segment count. Where a static segment and a parameter could both match, the static
 * one wins (`/v3/crm/tasks/automation` before `/v3/crm/tasks/{task_id}`).
 */
export class RouteTable<R extends KnownRoute> {
  private readonly buckets = new Map<string, Compiled<R>[]>();

  constructor(routes: R[]) {
    for (const route of routes) {
      const parts = route.path.split('/').slice(1);
      const compiled: Compiled<R> = {
        route,
        segments: parts.map((s) => (s.startsWith('{') ? null : s.toLowerCase())),
        params: parts.filter((s) => s.startsWith('{')).map((s) => s.slice(1, -1)),
      };
      const key = `${route.method} ${parts.length}`;
      this.buckets.set(key, [...(this.buckets.get(key) ?? []), compiled]);
    }
    // Most specific first: segment by segment, a static segment before a parameter.
    for (const bucket of this.buckets.values()) {
      bucket.sort((a, b) => {
        const i = a.segments.findIndex((s, k) => (s === null) !== (b.segments[k] === null));
        return i < 0 ? 0 : a.segments[i] === null ? 1 : -1;
      });
    }
  }

  /** The route for `method` (HEAD is served by GET) and the encoded `path`, or null. */
  match(method: string, path: string): RouteMatch<R> | null {
    const parts = splitPath(path);
    const verb = method === 'HEAD' ? 'get' : method.toLowerCase();
    const bucket = this.buckets.get(`${verb} ${parts.length}`);
    if (!bucket) return null;
    for (const candidate of bucket) {
      const params = matchSegments(candidate, parts);
      if (params) return { route: candidate.route, params };
    }
    return null;
  }

  /** Every route in the table. */
  routes(): R[] {
    return [...this.buckets.values()].flatMap((bucket) => bucket.map((c) => c.route));
  }

  /** The methods some route serves on `path` (for 405 and `Allow`). */
  methodsFor(path: string): Method[] {
    const parts = splitPath(path);
    const methods = new Set<Method>();
    for (const [key, bucket] of this.buckets) {
      if (!key.endsWith(` ${parts.length}`)) continue;
      for (const candidate of bucket) {
        if (matchSegments(candidate, parts)) methods.add(candidate.route.method);
      }
    }
    return [...methods];
  }
}

/** `/v3/customers/` → ['v3', 'customers']. */
function splitPath(path: string): string[] {
  const parts = path.split('/').slice(1);
  if (parts.length > 1 && parts[parts.length - 1] === '') parts.pop();
  return parts;
}

function matchSegments<R>(candidate: Compiled<R>, parts: string[]): Record<string, string> | null {
  let params: Record<string, string> | null = null;
  let p = 0;
  for (let i = 0; i < parts.length; i++) {
    const expected = candidate.segments[i];
    const actual = parts[i]!;
    if (expected === null) {
      if (!actual) return null;
      (params ??= {})[candidate.params[p++]!] = decodeParam(actual);
    } else if (expected !== actual && expected !== actual.toLowerCase()) {
      return null;
    }
  }
  return params ?? {};
}

function decodeParam(value: string): string {
  if (!value.includes('%')) return value;
  try {
    return decodeURIComponent(value);
  } catch {
    throw new ApiError({
      status: 400, code: 'invalid_path', title: 'Bad Request',
      detail: `The path segment ${value} is not valid percent-encoding.`,
      suggestion: 'Percent-encode identifiers in the path (encodeURIComponent).',
    });
  }
}
