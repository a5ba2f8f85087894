import type { Request } from 'express';
import { z } from 'zod';
import { validationFailed } from '../../platform/errors.ts';
import { route, type HandlerContext, type RouteSpec } from './route.ts';

/**
 * Cursor pagination over time-sortable ids: a page is "ids after the cursor's id" in the sort
 * direction, so rows inserted while a client pages never shift later pages (no gap, no duplicate).
 */
export const listQuery = {
  limit: z.coerce.number().int().min(1).max(100).default(20).describe('Page size, 1–100.'),
  cursor: z.string().max(200).optional().describe('`next_cursor` from the previous page.'),
  sort: z.enum(['created_at', '-created_at']).default('-created_at').describe('Newest first unless `created_at`.'),
};

export interface Page {
  limit: number;
  after: string | undefined;
  direction: 'asc' | 'desc';
}

export function pageOf(q: { limit: number; cursor?: string | undefined; sort: 'created_at' | '-created_at' }): Page {
  const direction = q.sort === 'created_at' ? 'asc' : 'desc';
  if (!q.cursor) return { limit: q.limit, after: undefined, direction };
  let decoded: { after?: unknown; dir?: unknown };
  try {
    decoded = JSON.parse(Buffer.from(q.cursor, 'base64url').toString('utf8'));
  } catch {
    decoded = {};
  }
  if (typeof decoded.after !== 'string' || decoded.dir !== direction) {
    throw validationFailed([{ path: 'cursor', message: 'not a cursor from this list with this sort; pass next_cursor unchanged, with the same sort' }]);
  }
  return { limit: q.limit, after: decoded.after, direction };
}

/** The id condition for a page, for a MikroORM `where`. */
export function idAfter(page: Page): Record<string, unknown> {
  if (!page.after) return {};
  return { id: page.direction === 'desc' ? { $lt: page.after } : { $gt: page.after } };
}

export interface ListDocument<T> {
  object: 'list';
  data: T[];
  has_more: boolean;
  next_cursor: string | null;
  url: string;
}

/** Builds the list document from `limit + 1` fetched rows, and the `Link: rel="next"` header. */
export function listDocument<T extends { id: string }>(
  req: Request, rows: T[], page: Page,
): { body: ListDocument<T>; headers: Record<string, string> } {
  const hasMore = rows.length > page.limit;
  const data = hasMore ? rows.slice(0, page.limit) : rows;
  const nextCursor = hasMore ? Buffer.from(JSON.stringify({ after: data.at(-1)!.id, dir: page.direction })).toString('base64url') : null;
  const headers: Record<string, string> = {};
  if (nextCursor) {
    const url = new URL(req.originalUrl, 'http://placeholder');
    url.searchParams.set('cursor', nextCursor);
    headers.Link = `<${url.pathname}${url.search}>; rel="next"`;
  }
  return { body: { object: 'list', data, has_more: hasMore, next_cursor: nextCursor, url: req.path }, headers };
}

/** The response schema of a list of `item`, for the OpenAPI document. */
export function listOf(item: z.ZodType) {
  return z.object({
    object: z.literal('list'),
    data: z.array(item),
    has_more: z.boolean(),
    next_cursor: z.string().nullable(),
    url: z.string(),
  });
}

/** The page a domain list function reads: the id condition, the direction and `limit + 1` rows' worth of limit. */
export interface PageArgs {
  where: Record<string, unknown>;
  direction: 'asc' | 'desc';
  limit: number;
}

type ListQueryValues = z.infer<z.ZodObject<typeof listQuery>>;

export interface ListRouteSpec<Q extends ListQueryValues, P, T extends { id: string }>
  extends Omit<RouteSpec<undefined, Q, P>, 'method' | 'status' | 'body' | 'query' | 'response' | 'handler'> {
  /** The schema of one element of `data`. */
  item: z.ZodType;
  /** The query: `listQuery` plus the list's filters; default `listQuery` alone. */
  query?: z.ZodType<Q>;
  /** Reads one page (`limit + 1` rows, so the list knows whether more follow). */
  list(ctx: HandlerContext<undefined, Q, P>, page: PageArgs): Promise<T[]>;
}

/** A `GET` list endpoint: cursor from the query, one page from `list`, the list document and its `Link` header. */
export function listRoute<Q extends ListQueryValues = ListQueryValues, P = undefined, T extends { id: string } = { id: string }>(
  spec: ListRouteSpec<Q, P, T>,
): RouteSpec<undefined, Q, P> {
  const { item, query, list, ...rest } = spec;
  return route<undefined, Q, P>({
    ...rest,
    method: 'get', status: 200,
    query: query ?? (z.strictObject(listQuery) as unknown as z.ZodType<Q>),
    response: listOf(item),
    async handler(ctx) {
      const page = pageOf(ctx.query);
      return listDocument(ctx.req, await list(ctx, { where: idAfter(page), direction: page.direction, limit: page.limit }), page);
    },
  });
}
