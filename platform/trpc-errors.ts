import { TRPCError } from '@trpc/server';
import { ApiError } from './errors.ts';

/**
 * An error whose message may not be shown to the caller: anything unexpected (a database error
 * carries its SQL, a programming error its internals). Domain errors (ApiError) and the errors the
 * procedures and middlewares raise on purpose are safe. Used by every tRPC router (admin, dashboard).
 */
export function isUnexpectedTrpcError(error: TRPCError): boolean {
  return error.code === 'INTERNAL_SERVER_ERROR' && !(error.cause instanceof ApiError);
}

/**
 * A tRPC error shape without a stack trace or cause, carrying the request id; an unexpected error's
 * message is replaced by `unexpected(requestId)`, under which the HTTP adapter logs the details.
 */
export function safeErrorShape<Shape extends { code: number; message: string; data: object }>(
  { shape, error, requestId }: { shape: Shape; error: TRPCError; requestId: string | null },
  unexpected: (requestId: string | null) => string,
): { code: number; message: string; data: Record<string, unknown> } {
  const data: Record<string, unknown> = { ...shape.data, requestId };
  delete data.stack;
  return { code: shape.code, message: isUnexpectedTrpcError(error) ? unexpected(requestId) : shape.message, data };
}

const STATUS_TO_TRPC: Record<number, TRPCError['code']> = {
  400: 'BAD_REQUEST', 404: 'NOT_FOUND', 409: 'CONFLICT', 422: 'UNPROCESSABLE_CONTENT', 429: 'TOO_MANY_REQUESTS', 503: 'SERVICE_UNAVAILABLE',
};

/**
 * A procedure's domain error (ApiError) as a tRPC error that keeps its meaning and field list
 * (used by every router's error middleware); null for any other error.
 */
export function domainErrorAsTrpc(error: TRPCError): TRPCError | null {
  const cause = error.cause;
  if (!(cause instanceof ApiError)) return null;
  const fields = (cause.errors ?? []).map((e) => ` ${e.path}: ${e.message}.`).join('');
  return new TRPCError({ code: STATUS_TO_TRPC[cause.status] ?? 'INTERNAL_SERVER_ERROR', message: `${cause.detail}${fields} ${cause.suggestion}`, cause });
}
