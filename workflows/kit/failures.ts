/**
 * Business refusals: what a workflow (an update's validator or handler) or an activity throws when
 * the request itself cannot succeed, as opposed to an outage. Always non-retryable
 * `ApplicationFailure`s, with a type from the one list below; the API maps each type to its
 * problem+json (platform/temporal-kit.ts `failureToProblem`). Pure: workflows import it.
 */
import { ApplicationFailure } from '@temporalio/common';

export const REFUSALS = {
  /** The resource's current state does not allow the transition (409 `invalid_state_transition`, with `current_state`). */
  invalidTransition: 'invalid_state_transition',
  /** An argument the workflow checks itself is wrong (422 `validation_failed`, the field in `path`). */
  validationFailed: 'validation_failed',
  /** The resource does not exist (404). */
  notFound: 'not_found',
  /** Not enough stock to reserve (409 `insufficient_stock`). */
  insufficientStock: 'insufficient_stock',
  /** The payment gateway refused the call (a declined card, a bad request): retrying cannot help. */
  gatewayRejected: 'GatewayRejected',
  /** A payment with the same request idempotency key was recorded first. */
  duplicatePayment: 'DuplicatePayment',
  /** Any other 4xx answer of a domain rule (its own code in the details' `code`). */
  rejected: 'request_rejected',
} as const;

export type RefusalType = (typeof REFUSALS)[keyof typeof REFUSALS];

/** Every refusal type: for `nonRetryableErrorTypes` in activity options. */
export const REFUSAL_TYPES: readonly RefusalType[] = Object.values(REFUSALS);

export function isRefusalType(type: string | null | undefined): type is RefusalType {
  return (REFUSAL_TYPES as readonly (string | null | undefined)[]).includes(type);
}

/**
 * Extension members of the problem document, carried as the failure's first detail: for
 * `invalid_state_transition`, `current_state`; for `validation_failed`, `path` (or `errors`);
 * anything else the API should show (e.g. `sku`, `requested`, `available`). A refusal made from a
 * problem document also carries its `status`, `code`, `title`, `suggestion` and `errors`.
 */
export type RefusalDetails = Record<string, unknown>;

/** A business refusal: a non-retryable `ApplicationFailure` of a listed type. */
export function refuse(type: RefusalType, message: string, details: RefusalDetails = {}): ApplicationFailure {
  return ApplicationFailure.create({ type, message, nonRetryable: true, details: [details] });
}

/** The refusal's details (its first detail), or `{}`. */
export function refusalDetails(failure: ApplicationFailure): RefusalDetails {
  const first: unknown = failure.details?.[0];
  return first && typeof first === 'object' ? (first as RefusalDetails) : {};
}
