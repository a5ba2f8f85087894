import type { EntityManager } from '@mikro-orm/postgresql';
import { GraphQLError } from 'graphql/index.js';
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
