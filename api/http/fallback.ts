import type { Request, Response } from 'express';
import { ApiError } from '../../platform/errors.ts';
import { RouteTable, type KnownRoute } from './route-table.ts';

function segments(path: string): string[] {
  return path.split('/').filter(Boolean);
}

function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const tmp = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = tmp;
    }
  }
  return row[b.length]!;
}

/** Distance between a concrete path and a route template; `{param}` segments match anything. */
function distance(path: string[], template: string[]): number {
  let d = Math.abs(path.length - template.length) * 8;
  for (let i = 0; i < Math.min(path.length, template.length); i++) {
    const t = template[i]!;
    if (!t.startsWith('{')) d += editDistance(path[i]!.toLowerCase(), t);
  }
  return d;
}

/** 405 with `Allow` for a path served with other methods, else 404 naming the nearest route. */
export function fallbackHandler(routes: KnownRoute[]) {
  const table = new RouteTable(routes);
  const templates = routes.map((r) => ({ method: r.method, path: r.path, segs: segments(r.path) }));
  return (req: Request, _res: Response) => {
    const path = segments(req.path);
    const allowed = table.methodsFor(req.path).map((m) => m.toUpperCase());
    if (allowed.length) {
      throw new ApiError({
        status: 405, code: 'method_not_allowed', title: 'Method Not Allowed',
        detail: `${req.method} is not supported on ${req.path}.`,
        suggestion: `Use one of: ${allowed.join(', ')}.`,
        headers: { Allow: allowed.join(', ') },
      });
    }
    const nearest = templates.reduce((best, t) => {
      const d = distance(path, t.segs);
      return d < best.d || (d === best.d && t.method === req.method.toLowerCase()) ? { t, d } : best;
    }, { t: templates[0]!, d: Number.POSITIVE_INFINITY });
    throw new ApiError({
      status: 404, code: 'route_not_found', title: 'Not Found',
      detail: `There is no route ${req.method} ${req.path}.`,
      suggestion: `Did you mean ${nearest.t.method.toUpperCase()} ${nearest.t.path}? The full list is at /v3/openapi.json.`,
      extensions: { nearest_route: { method: nearest.t.method.toUpperCase(), path: nearest.t.path } },
    });
  };
}
