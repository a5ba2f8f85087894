/**
 * Typed domain errors. Services throw them; one error middleware (`errorHandler` in
 * `api/http/problems.ts`) turns them into RFC 9457 problem+json (or problem+xml) documents. A
 * workflow's business refusal becomes one in `platform/temporal-kit.ts` (`failureToProblem`).
 * Every error carries a stable `code` and one actionable `suggestion`.
 */
export interface FieldError {
  path: string;
  message: string;
}

export interface ApiErrorInit {
  status: number;
  code: string;
  title: string;
  detail: string;
  suggestion: string;
  errors?: FieldError[];
  headers?: Record<string, string>;
  /** Extra members for the problem document (e.g. `decline_code`, `current_state`). */
  extensions?: Record<string, unknown>;
}

export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  readonly title: string;
  readonly detail: string;
  readonly suggestion: string;
  readonly errors: FieldError[] | undefined;
  readonly headers: Record<string, string>;
  readonly extensions: Record<string, unknown>;

  constructor(init: ApiErrorInit) {
    super(init.detail);
    this.name = 'ApiError';
    this.status = init.status;
    this.code = init.code;
    this.title = init.title;
    this.detail = init.detail;
    this.suggestion = init.suggestion;
    this.errors = init.errors;
    this.headers = init.headers ?? {};
    this.extensions = init.extensions ?? {};
  }
}

export const notFound = (resource: string, id: string): ApiError =>
  new ApiError({
    status: 404,
    code: 'not_found',
    title: 'Not Found',
    detail: `No ${resource} with id '${id}' exists for this account and mode.`,
    suggestion: `Check the id, and that the key's mode (live or test) matches the mode the ${resource} was created in.`,
  });

export const validationFailed = (errors: FieldError[], detail?: string): ApiError =>
  new ApiError({
    status: 422,
    code: 'validation_failed',
    title: 'Validation Failed',
    detail: detail ?? `${errors.length} field${errors.length === 1 ? '' : 's'} failed validation: ${errors.map((e) => e.path).join(', ')}.`,
    suggestion: 'Fix every field listed in `errors` and send the request again.',
    errors,
  });

export const conflict = (code: string, detail: string, suggestion: string, extensions?: Record<string, unknown>): ApiError =>
  new ApiError({ status: 409, code, title: 'Conflict', detail, suggestion, extensions });

export const serviceUnavailable = (what: string, retryAfterSeconds = 5): ApiError =>
  new ApiError({
    status: 503,
    code: 'service_unavailable',
    title: 'Service Unavailable',
    detail: `${what} is unreachable right now; nothing was changed.`,
    suggestion: `Retry after ${retryAfterSeconds} seconds with the same Idempotency-Key.`,
    headers: { 'Retry-After': String(retryAfterSeconds) },
  });
