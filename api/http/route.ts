import type { EntityManager } from '@mikro-orm/postgresql';
import type { NextFunction, Request, Response } from 'express';
import type { z } from 'zod';
import { IdempotencyStore } from '../../domain/idempotency/store.ts';
import type { Permission } from '../../domain/permissions.ts';
import { scopedEm } from '../../domain/scope.ts';
import { validationFailed, type FieldError } from '../../platform/errors.ts';
import { newId, type IdKind } from '../../platform/ids.ts';
import { addLogContext } from '../../platform/log-context.ts';
import type { AppDeps } from './deps.ts';
import { admit, admitAndRead, requirePermission } from './admission.ts';
import { DEFAULT_BODY_LIMIT, parseJson, readRawBody } from './body.ts';
import { state, type AuthContext } from './context.ts';
import { acceptsAny, notAcceptable } from './negotiate.ts';
import { applyIdempotency } from './idempotency.ts';
import { controlCharacterErrors, unsafeIntegerMessage } from './input-limits.ts';
import { RouteTable, type Method } from './route-table.ts';
import { sendDocument, writeRaw } from './send.ts';

export type { Method } from './route-table.ts';
const WITH_BODY: ReadonlySet<Method> = new Set(['post', 'put', 'patch']);
const EMPTY = Buffer.alloc(0);

export interface HandlerContext<B, Q, P> {
  deps: AppDeps;
  req: Request;
  res: Response;
  auth: AuthContext;
  body: B;
  query: Q;
  params: P;
  requestId: string;
  /** The body's bytes as received (to check a signature made over them). */
  rawBody: Buffer;
  /** The request's Idempotency-Key (scoped to the key's account and mode), if it has one. */
  idempotencyKey: string | null;
  /**
   * The id of the resource this request creates: new without an Idempotency-Key; with one, chosen
   * by the key's first attempt and stored with its claim, so every retry (after a crash or a 503)
   * creates, or finds, the same resource and reaches the same workflow.
   */
  resourceId(kind: IdKind): Promise<string>;
  /** An EntityManager confined to the key's account and mode (created on first use). */
  em(): EntityManager;
}

export interface HandlerResult {
  status?: number;
  body: unknown;
  headers?: Record<string, string>;
  /** A binary answer (a route with `binary`, e.g. a PDF): sent as is instead of `body`, typed with the route's first media type unless `headers` names another. */
  raw?: Buffer;
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
  /**
   * Further statuses the handler itself answers, for the OpenAPI document: with `schema`, a JSON
   * body of that shape (e.g. 202 for work still in progress); without, a problem document.
   */
  responses?: Record<number, { description: string; schema?: z.ZodType }>;
  bodyLimit?: number;
  /**
   * The success body is not a JSON/XML document but bytes of one of these media types: the handler
   * returns them as `raw` (sent with the first type) or writes them itself (a stream). A client whose
   * Accept admits only these types reaches the route; the OpenAPI document lists them.
   */
  binary?: { mediaType: string | readonly string[]; description: string };
  /**
   * The success answer may also be a stream of this media type (text/event-stream) when the
   * client's Accept prefers it; the handler negotiates (`prefersMediaType`) and writes the stream
   * itself. The JSON document stays the default.
   */
  stream?: { mediaType: string; description: string };
  /**
   * The endpoint starts or talks to workflows: answer 503 at once while Temporal is down, and give
   * its Temporal calls a deadline (`TEMPORAL_CALL_TIMEOUT_MS`, plus `temporalWaitMs`) after which
   * it answers 503 instead of hanging.
   */
  temporal?: boolean;
  /**
   * A GET whose handler only reads, quickly (one or two indexed queries: no writes, no workflows,
   * no stream, nothing slow): it may start beside the request's admission and is then answered in
   * about one database round trip, taking no concurrency slot (`admitAndRead` in admission.ts).
   * Opt-in per route; ignored on any other method and with `temporal` or `stream`.
   */
  readOnly?: boolean;
  /** A wait the handler asks Temporal for on purpose (e.g. a payment's synchronous wait), added to the deadline. */
  temporalWaitMs?: (deps: AppDeps) => number;
  handler(ctx: HandlerContext<B, Q, P>): Promise<HandlerResult>;
}

/** Identity function that infers the handler's types from the schemas. */
export function route<B = undefined, Q = undefined, P = undefined>(spec: RouteSpec<B, Q, P>): RouteSpec<B, Q, P> {
  return spec;
}

/** A `GET` of one resource (200): `get` reads it, usually by the path parameters. */
export function getRoute<P = undefined, Q = undefined>(
  spec: Omit<RouteSpec<undefined, Q, P>, 'method' | 'status' | 'body' | 'handler'> & { get(ctx: HandlerContext<undefined, Q, P>): Promise<unknown> },
): RouteSpec<undefined, Q, P> {
  const { get, ...rest } = spec;
  return route<undefined, Q, P>({ ...rest, method: 'get', status: 200, handler: async (ctx) => ({ body: await get(ctx) }) });
}

/**
 * Runs every schema and reports every bad field at once. Control characters in any string are
 * refused first, for every operation (input-limits.ts); a field named there is not named again.
 */
function validate(parts: [z.ZodType | undefined, unknown][]): unknown[] {
  const errors: FieldError[] = [];
  for (const [, input] of parts) controlCharacterErrors(input, '', errors);
  const named = new Set(errors.map((e) => e.path));
  const values = parts.map(([schema, input]) => {
    if (!schema) return undefined;
    const result = schema.safeParse(input);
    if (result.success) return result.data;
    for (const issue of result.error.issues) errors.push(...fieldErrors(issue).filter((e) => !named.has(e.path)));
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
  return [{ path: base || '(body)', message: unsafeIntegerMessage(issue) ?? issue.message }];
}

/**
 * One Express middleware that serves every route: a table lookup by method and path (see
 * `RouteTable`), then the pipeline: admission, permission, body, idempotency, validation, handler,
 * response. Requests that match no route go on to the fallback (404 with the nearest route, 405).
 */
export function routeDispatcher(routes: RouteSpec<any, any, any>[], deps: AppDeps) {
  const idempotency = new IdempotencyStore(deps.pool, deps.concurrency.instanceId);
  const table = new RouteTable(routes);
  const serve = async (spec: RouteSpec<any, any, any>, req: Request, res: Response): Promise<void> => {
    if (state(res).binaryOnly && !acceptsAny(req.headers.accept, binaryMediaTypes(spec))) {
      throw notAcceptable(req.headers.accept, binaryMediaTypes(spec).length
        ? `Accept: ${binaryMediaTypes(spec).join(' or ')} (or application/json)` : undefined);
    }
    const handle = async (auth: AuthContext, raw: Buffer): Promise<HandlerResult> => {
      const input = spec.body ? parseJson(raw) : undefined;
      const [body, query, params] = validate([[spec.body, input], [spec.query, req.query], [spec.params, req.params]]);
      let em: EntityManager | undefined;
      const idempotencyKey = state(res).idempotencyKey ?? null;
      const run = () => spec.handler({
        deps, req, res, auth, body, query, params,
        requestId: state(res).requestId,
        rawBody: raw,
        idempotencyKey,
        resourceId: (kind) => (idempotencyKey === null ? Promise.resolve(newId(kind)) : idempotency.resourceId(auth, idempotencyKey, newId(kind))),
        em: () => (em ??= scopedEm(deps.orm, auth)),
      });
      return spec.temporal ? withTemporalDeadline(deps, run, spec.temporalWaitMs?.(deps) ?? 0) : run();
    };
    let result: HandlerResult;
    if (isReadOnly(spec)) {
      // Read and admission overlap (admitAndRead); the read's errors wait for the admission's answer.
      result = await admitAndRead(deps, req, res, spec.permission, (auth) => handle(auth, EMPTY));
      const auth = state(res).auth!;
      addLogContext({ account_id: auth.accountId, mode: auth.livemode ? 'live' : 'test' });
    } else {
      const auth = await admit(deps, req, res);
      addLogContext({ account_id: auth.accountId, mode: auth.livemode ? 'live' : 'test' });
      requirePermission(auth, spec.permission);
      const raw = WITH_BODY.has(spec.method) ? await readRawBody(req, spec.bodyLimit ?? DEFAULT_BODY_LIMIT) : EMPTY;
      if (WITH_BODY.has(spec.method) && (await applyIdempotency(idempotency, req, res, auth, raw))) return;
      result = await handle(auth, raw);
    }
    if (spec.binary && result.raw) return writeRaw(res, result.status ?? spec.status, { 'Content-Type': binaryMediaTypes(spec)[0]!, ...result.headers }, result.raw);
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
    state(res).route = found.route.path;
    serve(found.route, req, res).catch(next);
  };
  /** What it serves, for introspection (the OpenAPI completeness test). */
  return Object.assign(dispatch, { table });
}

/**
 * Runs Temporal calls as a `temporal` route does: 503 at once while Temporal is down, and a deadline
 * (`TEMPORAL_CALL_TIMEOUT_MS` plus `waitMs`) after which they answer 503 instead of hanging. GraphQL's
 * mutations that start workflows run through it too.
 */
export async function withTemporalDeadline<T>(deps: AppDeps, run: () => Promise<T>, waitMs = 0): Promise<T> {
  await deps.temporal.ensureAvailable();
  return deps.temporal.connection.withDeadline(Date.now() + deps.config.TEMPORAL_CALL_TIMEOUT_MS + waitMs, run);
}

function isReadOnly(spec: RouteSpec<any, any, any>): boolean {
  return spec.readOnly === true && spec.method === 'get' && !spec.temporal && !spec.stream;
}

/** The non-JSON media types a route answers on success (its `binary` or `stream` option); none for a JSON/XML route. */
export function binaryMediaTypes(spec: Pick<RouteSpec<any, any, any>, 'binary' | 'stream'>): string[] {
  if (spec.stream) return [spec.stream.mediaType];
  return spec.binary ? [spec.binary.mediaType].flat() : [];
}
