/**
 * The client side of workflow-backed resources, the same for every area: search attributes set in
 * one place, the one way to create a resource (update-with-start), and the mapping from a
 * workflow's business refusals to problem+json. Imports no area.
 */
import {
  WithStartWorkflowOperation, WorkflowIdReusePolicy, WorkflowNotFoundError, WorkflowUpdateFailedError,
} from '@temporalio/client';
import { ApplicationFailure, type SearchAttributePair, type UpdateDefinition, type Workflow } from '@temporalio/common';
import { resourceSearchAttributes, type ResourceAttributes } from '../workflows/kit/search-attributes.ts';
import { REFUSALS, isRefusalType, refusalDetails, refuse, type RefusalType } from '../workflows/kit/failures.ts';
import { ApiError, conflict, validationFailed, type FieldError } from './errors.ts';
import type { TemporalHandle } from './temporal.ts';

/**
 * The `Bp*` search attributes of a workflow about one resource (workflows/kit/search-attributes.ts,
 * registered by platform/temporal-dev-server.ts and docker-compose.yml): every workflow of an
 * account, a mode, a customer or a resource can be found in the Temporal UI, and by status.
 */
export const searchAttributes = resourceSearchAttributes;
export type { ResourceAttributes };

export interface StartResource<W extends Workflow, Ret, Args extends any[]> {
  workflowType: string;
  workflowId: string;
  taskQueue: string;
  args: Parameters<W>;
  searchAttributes: SearchAttributePair[];
  /** Sent with the start; its result (the resource as created) is the call's result. */
  update: UpdateDefinition<Ret, Args>;
  updateArgs: Args;
  /**
   * The workflow's result is the same document as the update's (payments, refunds): when the run
   * finished before the update could answer (a short-lived workflow that completed first), its
   * result is the answer.
   */
  resultAnswersUpdate?: boolean;
}

/**
 * Creates a workflow-backed resource: the workflow is started together with an update
 * (update-with-start). The workflow's first activity writes the row; the update answers once it
 * is there, or fails with the workflow's refusal. The id is deterministic and an existing run is
 * used (`USE_EXISTING`), so a repeated call reaches the same workflow; a finished one is never
 * started again (`REJECT_DUPLICATE`).
 */
export function startResource<W extends Workflow, Ret, Args extends any[]>(
  temporal: Pick<TemporalHandle, 'client'>, opts: StartResource<W, Ret, Args>,
): Promise<Ret> {
  // The options' type is conditional on `Parameters<W>`, which TypeScript cannot resolve for a
  // generic `W`; `args` is exactly `Parameters<W>` (checked by `StartResource`).
  const start = new WithStartWorkflowOperation<W>(opts.workflowType, {
    workflowId: opts.workflowId,
    taskQueue: opts.taskQueue,
    args: opts.args,
    workflowIdConflictPolicy: 'USE_EXISTING',
    workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
    typedSearchAttributes: opts.searchAttributes,
  } as never);
  const answer = temporal.client.workflow.executeUpdateWithStart(opts.update, { args: opts.updateArgs, startWorkflowOperation: start });
  if (!opts.resultAnswersUpdate) return answer;
  return answer.catch(async (err: unknown) => {
    // The server's failure for an update its workflow outran (`AcceptedUpdateCompletedWorkflow`).
    const type = applicationFailureOf(err)?.type;
    if (!(err instanceof WorkflowUpdateFailedError) || (type && type !== 'AcceptedUpdateCompletedWorkflow')) throw err;
    const description = await temporal.client.workflow.getHandle(opts.workflowId).describe();
    if (description.status.name !== 'COMPLETED') throw err;
    return (await temporal.client.workflow.getHandle(opts.workflowId).result()) as Ret;
  });
}

/** The `ApplicationFailure` an update (or the activity it ran) failed with, however deep in the causes. */
export function applicationFailureOf(err: unknown): ApplicationFailure | undefined {
  for (let e: unknown = err; e; e = (e as { cause?: unknown }).cause) {
    if (e instanceof ApplicationFailure) return e;
  }
  return undefined;
}

export interface FailureContext {
  /** What the resource is called in messages, e.g. `Subscription sub_…`. */
  resource: string;
  /** The suggestion of a 409 whose refusal brings none. */
  suggestion: string;
  /** Reads the resource's state when the failure does not carry it (or the workflow has finished). */
  currentState: () => Promise<string>;
}

const DEFAULT_STATUS: Partial<Record<RefusalType, number>> = {
  [REFUSALS.notFound]: 404,
  [REFUSALS.gatewayRejected]: 402,
  [REFUSALS.rejected]: 422,
};
const TITLES: Record<number, string> = { 402: 'Payment Required', 404: 'Not Found', 409: 'Conflict', 422: 'Unprocessable Content' };

const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

/**
 * An activity's business refusal made from a 4xx problem (a domain rule's `ApiError`): carries the
 * whole problem, so the API answers exactly what the domain function would have answered.
 */
export function refusalFromProblem(err: ApiError): ApplicationFailure {
  const type: RefusalType = isRefusalType(err.code) ? err.code : REFUSALS.rejected;
  return refuse(type, err.detail, {
    ...err.extensions, status: err.status, code: err.code, title: err.title, suggestion: err.suggestion,
    ...(err.errors ? { errors: err.errors } : {}),
  });
}

/**
 * The problem document for a failed update: a refusal by its type (409 `invalid_state_transition`
 * with `current_state`, 422 `validation_failed`, 409 `insufficient_stock`, 404, 402 …), a finished
 * workflow as 409 with the state read fresh. Undefined for anything else (an outage, a bug): the
 * caller rethrows it.
 */
export async function failureToProblem(err: unknown, ctx: FailureContext): Promise<ApiError | undefined> {
  if (err instanceof WorkflowNotFoundError) {
    const state = await ctx.currentState();
    return conflict(REFUSALS.invalidTransition, `${ctx.resource} is ${state}; it cannot change any more.`, ctx.suggestion, { current_state: state });
  }
  if (!(err instanceof WorkflowUpdateFailedError)) return undefined;
  const failure = applicationFailureOf(err);
  if (!failure || !isRefusalType(failure.type)) return undefined;
  const { status, code, title, suggestion, errors, path, ...extensions } = refusalDetails(failure);
  const fieldErrors = Array.isArray(errors) ? (errors as FieldError[]) : undefined;
  switch (failure.type) {
    case REFUSALS.invalidTransition: {
      const state = str(extensions.current_state) ?? await ctx.currentState();
      return conflict(REFUSALS.invalidTransition, `${ctx.resource} cannot change now: ${failure.message} (current state: ${state})`,
        str(suggestion) ?? ctx.suggestion, { ...extensions, current_state: state });
    }
    case REFUSALS.validationFailed:
      return validationFailed(fieldErrors ?? [{ path: str(path) ?? '(body)', message: failure.message }]);
    default: {
      const httpStatus = typeof status === 'number' ? status : DEFAULT_STATUS[failure.type] ?? 409;
      return new ApiError({
        status: httpStatus, code: str(code) ?? failure.type, title: str(title) ?? TITLES[httpStatus] ?? 'Conflict',
        detail: failure.message, suggestion: str(suggestion) ?? ctx.suggestion, errors: fieldErrors, extensions,
      });
    }
  }
}

/** Runs `send` (an update to a resource's workflow); a refusal becomes its problem document. */
export async function sendUpdate<T>(send: () => Promise<T>, ctx: FailureContext): Promise<T> {
  try {
    return await send();
  } catch (err) {
    throw (await failureToProblem(err, ctx)) ?? err;
  }
}
