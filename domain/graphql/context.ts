import type { EntityManager } from '@mikro-orm/postgresql';
import { GraphQLError } from 'graphql/index.js';
import type { IdKind } from '../../platform/ids.ts';
import type { TemporalHandle } from '../../platform/temporal.ts';
import type { PaymentGateways } from '../payments/public.ts';
import type { StockChangeView } from '../warehouses/public.ts';
import { allows, ALL_PERMISSIONS, type Permission } from '../permissions.ts';
import type { Scope } from '../scope.ts';
import type { Loaders } from './loaders.ts';

/** Who is asking: the admitted key (the same AuthContext REST handlers get, reduced to what resolvers read). */
export interface Caller extends Scope {
  keyId: string;
  keyType: 'live' | 'test' | 'restricted';
  permissions: readonly string[];
}

/**
 * What every resolver receives, built once per HTTP request: the caller, an EntityManager confined
 * to the caller's account and mode (so no resolver can read across accounts or modes), the
 * request's batch loaders, and what the mutations need from the pipeline (request id, idempotency).
 */
export interface GraphQLContext {
  caller: Caller;
  em: EntityManager;
  requestId: string;
  loaders: Loaders;
  /** The request's Idempotency-Key, claimed by the pipeline (null without one). */
  idempotencyKey: string | null;
  /**
   * The id of the record a mutation creates, as REST's `resourceId`: with an Idempotency-Key the
   * key's first attempt chooses it, so a retry after a crash finds (or creates) the same record.
   */
  resourceId(kind: IdKind): Promise<string>;
  /** Runs a mutation's Temporal calls as a `temporal` REST route does (503 while Temporal is down, a deadline). */
  withTemporal<T>(run: () => Promise<T>): Promise<T>;
  /** What the writes need besides the EntityManager, as the REST handlers get them. */
  services: { temporal: TemporalHandle; paymentGateways: PaymentGateways; billingCyclesPerRun: number };
  /** The process's realtime stock feed (the warehouses area's), for subscriptions; absent without an HTTP server. */
  stockFeed?: StockFeed;
}

/** A source of committed stock changes of one account and mode (the warehouses realtime hub). */
export interface StockFeed {
  /** Calls `onChange` for each change of the scope that passes the filter, until the returned function is called or the feed closes (`onClose`). */
  subscribe(
    scope: Scope, filter: { warehouses: readonly string[] | null; skus: readonly string[] | null },
    onChange: (change: StockChangeView) => void, onClose: () => void,
  ): Promise<() => void>;
}


/**
 * The field-level permission check: a field that reads or writes an area's data needs the scope
 * the REST route for the same data needs. Without it the field resolves to an error that names the
 * permission (and null in `data`), never to the data.
 */
export function requirePermission(ctx: GraphQLContext, permission: Permission): void {
  const granted = ctx.caller.keyType === 'restricted' ? ctx.caller.permissions : [ALL_PERMISSIONS];
  if (allows(granted, permission)) return;
  throw new GraphQLError(`This restricted key lacks the permission ${permission}.`, {
    extensions: {
      code: 'permission_denied', status: 403, required_permission: permission,
      suggestion: `Create a restricted key that includes ${permission} (or ${permission.replace(':read', ':write')}), or leave this field out of the query.`,
    },
  });
}
