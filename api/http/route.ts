import type { EntityManager } from '@mikro-orm/postgresql';
import type { NextFunction, Request, Response } from 'express';
import type { z } from 'zod';
import { IdempotencyStore } from '../../domain/idempotency/store.ts';
import type { Permission } from '../../domain/permissions.ts';
import { scopedEm } from '../../domain/scope.ts';
import { validationFailed, type FieldError } from '../../platform/errors.ts';
import type { AppDeps } from '../deps.ts';
import { admit, requirePermission } from './admission.ts';
import { DEFAULT_BODY_LIMIT, parseJson, readRawBody } from './body.ts';
import { state, type AuthContext } from './context.ts';
import { applyIdempotency } from './idempotency.ts';
import { RouteTable, type Method } from './route-table.ts';
import { sendDocument } from './send.ts';

export type { Method } from './route-table.ts';
const WITH_BODY: ReadonlySet<Method> = new Set(['post', 'put', 'patch']);

export interface HandlerContext<B, Q, P> {
  deps: AppDeps;
  req: Request;
  res: Response;
  auth: AuthContext;
  body: B;
  query: Q;
  params: P;
  requestId: string;
  /** An EntityManager confined to the key's account and mode (created on first use). */
  em(): EntityManager;
}

export interface HandlerResult {
  status?: number;
  body: unknown;
  headers?: Record<string, string>;
}

/**
 * One endpoint: its contract (schemas, permission, status) and its handler. The same definition
 * mounts the route, validates requests and produces the OpenAPI document.
 */
export interface RouteSpec<B = unknown, Q = unknown, P = unknown> {
  method: Method;
  /** OpenAPI style: `/v3/customers/{customer_id}`. */
  path: string;
  operationId: string;
  summary: string;
  tag: string;
  permission: Permission;
  body?: z.ZodType<B>;
  query?: z.ZodType<Q>;
  params?: z.ZodType<P>;
  response: z.ZodType;
  status: number;
  bodyLimit?: number;
  /** The endpoint starts or talks to workflows: answer 503 at once while Temporal is down. */
  temporal?: boolean;
  handler(ctx: HandlerContext<B, Q, P>): Promise<HandlerResult>;
}

/** Identity function that infers the handler's types from the schemas. */
export function route<B = undefined, Q = undefined, P = undefined>(spec: RouteSpec<B, Q, P>): RouteSpec<B, Q, P> {
  return spec;
}

/** Runs every schema and reports every bad field at once. */
function validate(parts: [z.ZodType | undefined, unknown][]): unknown[] {
  const errors: FieldError[] = [];
  const values = parts.map(([schema, input]) => {
    if (!schema) return undefined;
    const result = schema.safeParse(input);
    if (result.success) return result.data;
    for (const issue of result.error.issues) errors.push(...fieldErrors(issue));
    return undefined;
  });
  if (errors.length) throw validationFailed(errors);
  return values;
}

function fieldErrors(issue: z.core.$ZodIssue): FieldError[] {
  const base = issue.path.map(String).join('.');
  if (issue.code === 'unrecognized_keys') {
    return issue.keys.map((k) => ({ path: base ? `${base}.${k}` : k, message: 'unknown field; remove it or check its spelling against the API reference' }));
  }
  return [{ path: base || '(body)', message: issue.message }];
}

/**
 * One Express middleware that serves every route: a table lookup by method and path (see
 * `RouteTable`), then the pipeline: admission, permission, body, idempotency, validation, handler,
 * response. Requests that match no route go on to the fallback (404 with the nearest route, 405).
 */
export function routeDispatcher(routes: RouteSpec<any, any, any>[], deps: AppDeps) {
  const idempotency = new IdempotencyStore(deps.pool);
  const table = new RouteTable(routes);
  const serve = async (spec: RouteSpec<any, any, any>, req: Request, res: Response): Promise<void> => {
    const auth = await admit(deps, req, res);
    requirePermission(auth, spec.permission);
    const raw = WITH_BODY.has(spec.method) ? await readRawBody(req, spec.bodyLimit ?? DEFAULT_BODY_LIMIT) : Buffer.alloc(0);
    if (WITH_BODY.has(spec.method) && (await applyIdempotency(idempotency, req, res, auth, raw))) return;
    const input = spec.body ? parseJson(raw) : undefined;
    const [body, query, params] = validate([[spec.body, input], [spec.query, req.query], [spec.params, req.params]]);
    if (spec.temporal) await deps.temporal.ensureAvailable();
    let em: EntityManager | undefined;
    const result = await spec.handler({
      deps, req, res, auth, body, query, params,
      requestId: state(res).requestId,
      em: () => (em ??= scopedEm(deps.orm, auth)),
    });
    await sendDocument(res, result.status ?? spec.status, result.body, { headers: result.headers });
  };
  const dispatch = (req: Request, res: Response, next: NextFunction): void => {
    let found;
    try {
      found = table.match(req.method, req.path);
    } catch (err) {
      return next(err);
    }
    if (!found) return next();
    req.params = found.params;
    serve(found.route, req, res).catch(next);
  };
  /** What it serves, for introspection (the OpenAPI completeness test). */
  return Object.assign(dispatch, { table });
}
