import type { ErrorRequestHandler, Request, Response } from 'express';
import { isGrpcServiceError } from '@temporalio/client';
import { ApiError } from '../../platform/errors.ts';
import type { Logger } from '../../platform/logger.ts';
import { state } from './context.ts';
import { sendDocument } from './send.ts';

/** Where each error code is documented; the `type` member of every problem document. */
export const PROBLEM_BASE = 'https://docs.business-platform.dev/errors/';

export async function sendProblem(req: Request, res: Response, err: ApiError): Promise<void> {
  const problem: Record<string, unknown> = {
    type: PROBLEM_BASE + err.code,
    title: err.title,
    status: err.status,
    detail: err.detail,
    instance: req.originalUrl,
    code: err.code,
    request_id: state(res).requestId,
    suggestion: err.suggestion,
    ...err.extensions,
  };
  if (err.errors) problem.errors = err.errors;
  await sendDocument(res, err.status, problem, { headers: err.headers, problem: true });
}

/** Maps anything thrown to a problem document; a 500 never shows a stack trace or SQL. */
export function errorHandler(logger: Logger): ErrorRequestHandler {
  return (err: unknown, req, res, _next) => {
    const apiError = toApiError(err);
    if (apiError.status >= 500 && apiError.code === 'internal_error') {
      logger.error('unhandled error', { request_id: state(res).requestId, path: req.path, error: err });
    }
    if (res.headersSent) return res.end();
    sendProblem(req, res, apiError).catch((sendErr: unknown) => {
      logger.error('could not send error response', { error: sendErr });
      if (!res.headersSent) res.status(500).end();
    });
  };
}

const GRPC_UNAVAILABLE = 14;
const GRPC_DEADLINE_EXCEEDED = 4;

/** A Temporal call that failed because the server could not be reached (not a business answer). */
function isTemporalDown(err: unknown): boolean {
  for (let e = err as { cause?: unknown } | undefined, depth = 0; e && depth < 4; e = e.cause as typeof e, depth++) {
    if (isGrpcServiceError(e) && (e.code === GRPC_UNAVAILABLE || e.code === GRPC_DEADLINE_EXCEEDED)) return true;
    if ((e as Error).name === 'TransportError' || (e as Error).name === 'ConnectionError') return true;
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
  return new ApiError({
    status: 500, code: 'internal_error', title: 'Internal Server Error',
    detail: 'Something went wrong on our side; the request was not completed.',
    suggestion: 'Retry with the same Idempotency-Key; if it keeps failing, contact support with the request_id.',
  });
}

function isDatabaseDown(err: unknown): boolean {
  const code = (err as { code?: string })?.code;
  return code === 'ECONNREFUSED' || code === '57P01' || code === '57P03' || code === '08006' || code === '08001';
}

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
