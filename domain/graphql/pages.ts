import { validationFailed } from '../../platform/errors.ts';
import type { Permission } from '../permissions.ts';
import { requirePermission, type GraphQLContext } from './context.ts';

/**
 * Page sizes. A root list pages like REST (`first` 1–100, default 20, `after` the previous page's
 * `endCursor`); a list nested under a record (a customer's orders) returns its newest `first`
 * (1–20, default 5) and says in `hasNextPage` whether more exist — to page further, use the root
 * list with the parent's id as a filter. Backward paging (`last`, `before`) is not offered.
 */
export const ROOT_PAGE = { default: 20, max: 100 } as const;
export const NESTED_PAGE = { default: 5, max: 20 } as const;

export interface ConnectionArgs {
  first?: number | null | undefined;
  after?: string | null | undefined;
  last?: number | null | undefined;
  before?: string | null | undefined;
}

function firstOf(args: ConnectionArgs, bounds: { default: number; max: number }): number {
  if (args.last != null || args.before != null) {
    throw validationFailed([{ path: args.last != null ? 'last' : 'before', message: 'backward paging is not supported; page forward with first and after' }]);
  }
  const first = args.first ?? bounds.default;
  if (first < 1 || first > bounds.max) throw validationFailed([{ path: 'first', message: `must be between 1 and ${bounds.max}` }]);
  return first;
}

const encode = (id: string) => Buffer.from(JSON.stringify({ after: id })).toString('base64url');

function decode(cursor: string): string {
  try {
    const value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as { after?: unknown };
    if (typeof value.after === 'string' && value.after.length <= 64) return value.after;
  } catch {
    // reported below
  }
  throw validationFailed([{ path: 'after', message: 'not a cursor from this list; pass pageInfo.endCursor unchanged' }]);
}

/** The page a domain list function reads for a root connection (newest first, `first + 1` rows). */
export function rootPage(args: ConnectionArgs): { where: Record<string, unknown>; direction: 'desc'; limit: number } {
  const limit = firstOf(args, ROOT_PAGE);
  return { where: args.after ? { id: { $lt: decode(args.after) } } : {}, direction: 'desc', limit };
}

/** How many rows a nested connection shows; the loader reads one more to know whether more follow. */
export function nestedFirst(args: ConnectionArgs): number {
  if (args.after != null) throw validationFailed([{ path: 'after', message: 'a nested list shows its newest records only; page further with the root list filtered by the parent id' }]);
  return firstOf(args, NESTED_PAGE);
}

/** A Relay connection from up to `limit + 1` rows, newest first. */
export function connectionOf<T extends { id: string }>(rows: T[], limit: number) {
  const page = rows.slice(0, limit);
  return {
    edges: page.map((node) => ({ node, cursor: encode(node.id) })),
    pageInfo: {
      hasNextPage: rows.length > limit,
      hasPreviousPage: false,
      startCursor: page[0] ? encode(page[0].id) : null,
      endCursor: page.at(-1) ? encode(page.at(-1)!.id) : null,
    },
  };
}

/**
 * A nested connection (a customer's orders, an order's shipments): with the permission the REST route
 * needs, the parent's newest `first` records (optionally of some statuses), read for every parent in
 * the query by one per-request batch loader — one statement per relation, whatever the parents.
 */
export async function newestOfParent<V extends { id: string }, S = never>(ctx: GraphQLContext, parentId: string, opts: {
  permission: Permission;
  loader: string;
  args: ConnectionArgs & { status?: readonly S[] | null };
  parentOf: (row: V) => string | null;
  read: (parentIds: readonly string[], limit: number, status: readonly S[] | undefined) => Promise<V[]>;
}) {
  requirePermission(ctx, opts.permission);
  const first = nestedFirst(opts.args);
  const status = opts.args.status ?? undefined;
  const rows = await ctx.loaders.byParent(opts.loader, { first, status }, opts.parentOf, (ids) => opts.read(ids, first + 1, status)).load(parentId);
  return connectionOf(rows, first);
}
