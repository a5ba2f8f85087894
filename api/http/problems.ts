import type { ErrorRequestHandler, Request, Response } from 'express';
import { status as grpcStatus } from '@grpc/grpc-js';
import { isGrpcServiceError } from '@temporalio/client';
import { ApiError } from '../../platform/errors.ts';
import type { Logger } from '../../platform/logger.ts';
import { state } from './context.ts';
import { ERROR_DOCS_PATH } from './error-codes.ts';
import { sendDocument } from './send.ts';

/**
 * Where each error code is documented: `GET /docs/errors/{code}` on this server (api/app.ts). The
 * `type` member is that page's absolute URL, built from the request's origin (its scheme, honouring
 * X-Forwarded-Proto from a proxy on loopback, and its Host), so it resolves wherever the API is served.
 */
export function problemType(req: Request, code: string): string {
  const host = req.get('host');
  const path = ERROR_DOCS_PATH + encodeURIComponent(code);
  return host ? `${req.protocol}://${host}${path}` : path;
}

export async function sendProblem(req: Request, res: Response, err: ApiError): Promise<void> {
  await sendDocument(res, err.status, problemDocument(req, res, err), { headers: err.headers, problem: true });
}

/** The RFC 9457 document for an error (also sent as a stream's last event, e.g. /v3/ai/ask over SSE). */
export function problemDocument(req: Request, res: Response, err: ApiError): Record<string, unknown> {
  const problem: Record<string, unknown> = {
    type: problemType(req, err.code),
    title: err.title,
    status: err.status,
    detail: err.detail,
    instance: req.originalUrl,
    code: err.code,
    request_id: state(res).requestId,
    suggestion: err.suggestion,
  };
  // Extension members add to the standard ones, never replace them (`status` stays the HTTP status).
  for (const [name, value] of Object.entries(err.extensions)) if (!(name in problem)) problem[name] = value;
  if (err.errors) problem.errors = err.errors;
  state(res).problem = problem; // the request log keeps it
  return problem;
}

/** Maps anything thrown to a problem document; a 500 never shows a stack trace or SQL. */
export function errorHandler(logger: Logger): ErrorRequestHandler {
  return (err: unknown, req, res, _next) => {
    const apiError = toApiError(err);
    if (apiError.status >= 500 && apiError.code === 'internal_error') {
      logger.error('unhandled error', { request_id: state(res).requestId, path: req.path, error: err });
    }
    // A 422 the database decided is a schema bound missing (or a server bug): the client gets its
    // 422, the operators a line naming the column (never the value, which the message can quote).
    const refusal = err instanceof ApiError ? null : databaseRefusal(err);
    if (refusal) logger.warn('the database refused a value that validation let through', { request_id: state(res).requestId, path: req.path, database: refusal });
    if (res.headersSent) return res.end();
    sendProblem(req, res, apiError).catch((sendErr: unknown) => {
      logger.error('could not send error response', { error: sendErr });
      if (!res.headersSent) res.status(500).end();
    });
  };
}

/**
 * gRPC codes of a Temporal call that failed because the server could not serve it now: unreachable,
 * no answer within the deadline, or over its capacity (RESOURCE_EXHAUSTED: a namespace's rate
 * limit, or a workflow with as many updates in flight as the server allows), once the connection's
 * retries have run out of time (platform/temporal-calls.ts).
 */
const GRPC_TEMPORARILY_UNAVAILABLE: ReadonlySet<number> = new Set([grpcStatus.UNAVAILABLE, grpcStatus.DEADLINE_EXCEEDED, grpcStatus.RESOURCE_EXHAUSTED]);

/** A Temporal call that failed because the server could not serve it now (not a business answer). */
function isTemporalDown(err: unknown): boolean {
  for (let e = err as { cause?: unknown } | undefined, depth = 0; e && depth < 4; e = e.cause as typeof e, depth++) {
    if (isGrpcServiceError(e) && GRPC_TEMPORARILY_UNAVAILABLE.has(e.code)) return true;
    const name = (e as Error).name;
    // An update whose deadline passed (Temporal down, or no answer in time): a retry with the same
    // Idempotency-Key reaches the same workflow.
    if (name === 'TransportError' || name === 'ConnectionError' || name === 'WorkflowUpdateRPCTimeoutOrCancelledError') return true;
  }
  return false;
}

export function toApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  const e = err as { type?: string; status?: number; code?: string; name?: string; message?: string };
  // Express's own body and JSON errors
  if (e?.type === 'entity.too.large') return payloadTooLarge();
  if (isDatabaseDown(err)) return unavailable('The database');
  if (isTemporalDown(err)) return unavailable('The workflow engine (Temporal)');
  const invalid = invalidValue(err);
  if (invalid) return invalid;
  return new ApiError({
    status: 500, code: 'internal_error', title: 'Internal Server Error',
    detail: 'Something went wrong on our side; the request was not completed.',
    suggestion: 'Retry with the same Idempotency-Key; if it keeps failing, contact support with the request_id.',
  });
}

/**
 * PostgreSQL data exceptions caused by a value the client sent that validation let through: the
 * last line of defence behind the schemas' bounds, so such input is a 422, never a 500. The
 * database's own message is not shown (it can quote SQL); only what kind of value was refused.
 */
const DATA_EXCEPTIONS: Record<string, string> = {
  '22003': 'A number in the request is outside the range that can be stored',
  '22P02': 'A value in the request is not valid text for its type',
  '22007': 'A date or time in the request is not in a valid format',
  '22008': 'A date or time in the request is out of range',
  '22021': 'Text in the request contains a character that cannot be stored (such as NUL)',
};

interface DatabaseRefusal {
  code: string;
  table?: string;
  column?: string;
  routine?: string;
}

/** The PostgreSQL data exception in `err`'s causes, by what it names (code, table, column), never its message. */
export function databaseRefusal(err: unknown): DatabaseRefusal | null {
  for (let e = err as (Partial<DatabaseRefusal> & { cause?: unknown }) | undefined, depth = 0; e && depth < 4; e = e.cause as typeof e, depth++) {
    if (typeof e.code === 'string' && e.code in DATA_EXCEPTIONS) {
      return { code: e.code, ...(e.table ? { table: e.table } : {}), ...(e.column ? { column: e.column } : {}), ...(e.routine ? { routine: e.routine } : {}) };
    }
  }
  return null;
}

function invalidValue(err: unknown): ApiError | null {
  const refusal = databaseRefusal(err);
  if (!refusal) return null;
  return new ApiError({
    status: 422, code: 'validation_failed', title: 'Validation Failed',
    detail: `${DATA_EXCEPTIONS[refusal.code]}; nothing was changed.`,
    suggestion: 'Check the documented bounds and formats of the fields you sent (integers within their range, real calendar dates, no control characters) and send the request again.',
  });
}

/**
 * The database could not be reached or did not answer in time: a refused or dropped connection,
 * the server shutting down or starting, the pool's connect timeout, a statement or query timeout.
 */
export function isDatabaseDown(err: unknown): boolean {
  for (let e = err as { code?: string; message?: string; cause?: unknown } | undefined, depth = 0; e && depth < 4; e = e.cause as typeof e, depth++) {
    const code = e.code;
    if (code && DATABASE_DOWN_CODES.has(code)) return true;
    if (typeof e.message === 'string' && DATABASE_DOWN_MESSAGES.some((m) => m.test(e!.message!))) return true;
  }
  return false;
}

const DATABASE_DOWN_CODES = new Set([
  'ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTFOUND',
  '57P01', '57P02', '57P03', '57014', '08000', '08003', '08006', '08001', '08004', '53300',
]);
const DATABASE_DOWN_MESSAGES = [
  /timeout exceeded when trying to connect/i,
  /Connection terminated/i,
  /Query read timeout/i,
  /Client has encountered a connection error/i,
];

function unavailable(what: string): ApiError {
  return new ApiError({
    status: 503, code: 'service_unavailable', title: 'Service Unavailable',
    detail: `${what} is unreachable right now; nothing was changed.`,
    suggestion: 'Retry after a few seconds with the same Idempotency-Key.',
    headers: { 'Retry-After': '5' },
  });
}

export function payloadTooLarge(limit = 1024 * 1024): ApiError {
  return new ApiError({
    status: 413, code: 'payload_too_large', title: 'Payload Too Large',
    detail: `The request body is larger than ${limit} bytes.`,
    suggestion: 'Send a smaller body; split bulk changes across several requests.',
  });
}
