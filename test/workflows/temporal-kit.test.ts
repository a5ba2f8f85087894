import { WorkflowNotFoundError, WorkflowUpdateFailedError } from '@temporalio/client';
import { ActivityFailure, ApplicationFailure, RetryState } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { ApiError } from '../../platform/errors.ts';
import { failureToProblem, refusalFromProblem, searchAttributes } from '../../platform/temporal-kit.ts';
import { REFUSALS, isRefusalType, refuse } from '../../workflows/kit/failures.ts';
import { workflowIds } from '../../workflows/kit/ids.ts';
import { SEARCH_ATTRIBUTE_TYPES } from '../../workflows/kit/search-attributes.ts';
import { SEARCH_ATTRIBUTES } from '../../platform/temporal-dev-server.ts';

const ctx = { resource: 'Order ord_1', suggestion: 'Look first.', currentState: async () => 'fulfilled' };
const updateFailed = (cause: Error) => new WorkflowUpdateFailedError('update failed', cause);

describe('workflow ids', () => {
  it('builds <kind>-<id> and parses only its own kind back', () => {
    const ids = workflowIds('subscription');
    expect(ids.id('sub_1')).toBe('subscription-sub_1');
    expect(ids.parse('subscription-sub_1')).toBe('sub_1');
    expect(ids.parse('payment-pay_1')).toBeNull();
    expect(ids.parse('subscription-')).toBeNull();
  });
});

describe('search attributes', () => {
  const values = (pairs: ReturnType<typeof searchAttributes>) => Object.fromEntries(pairs.map((p) => [p.key.name, p.value]));

  it('sets BpAccountId, BpMode, BpResourceId, BpCustomerId only with a customer, BpStatus only with a status', () => {
    expect(values(searchAttributes({ accountId: 'acct_1', livemode: false, resourceId: 'pay_1', customerId: null }))).toEqual({
      BpAccountId: 'acct_1', BpMode: 'test', BpResourceId: 'pay_1',
    });
    expect(values(searchAttributes({ accountId: 'acct_1', livemode: true, resourceId: 'ord_1', customerId: 'cus_1', status: 'processing' }))).toEqual({
      BpAccountId: 'acct_1', BpMode: 'live', BpResourceId: 'ord_1', BpCustomerId: 'cus_1', BpStatus: 'processing',
    });
  });

  it('are all registered by the dev server the launcher and the tests start', () => {
    expect(Object.keys(SEARCH_ATTRIBUTES).sort()).toEqual(Object.keys(SEARCH_ATTRIBUTE_TYPES).sort());
  });
});

describe('business refusals to problem+json', () => {
  it('refuse() is non-retryable and typed from the one list', () => {
    const f = refuse(REFUSALS.insufficientStock, 'short', { sku: 'A' });
    expect(f.nonRetryable).toBe(true);
    expect(f.type).toBe('insufficient_stock');
    expect(isRefusalType(f.type)).toBe(true);
    expect(isRefusalType('SomethingElse')).toBe(false);
  });

  it('an invalid transition is 409 with current_state, from the failure or read fresh', async () => {
    const carried = await failureToProblem(updateFailed(refuse(REFUSALS.invalidTransition, 'the order is canceled', { current_state: 'canceled' })), ctx);
    expect(carried).toMatchObject({ status: 409, code: 'invalid_state_transition', extensions: { current_state: 'canceled' } });
    const fresh = await failureToProblem(updateFailed(refuse(REFUSALS.invalidTransition, 'busy')), ctx);
    expect(fresh?.extensions).toEqual({ current_state: 'fulfilled' });
    const gone = await failureToProblem(new WorkflowNotFoundError('gone', 'order-ord_1', undefined), ctx);
    expect(gone).toMatchObject({ status: 409, extensions: { current_state: 'fulfilled' } });
  });

  it('an activity refusal made from a problem comes back as that problem, through the ActivityFailure', async () => {
    const problem = new ApiError({
      status: 409, code: 'insufficient_stock', title: 'Conflict', detail: 'Not enough stock', suggestion: 'Order fewer.',
      extensions: { sku: 'A', requested: 2, available: 1 },
    });
    const activity = new ActivityFailure('activity failed', 'createOrder', '1', RetryState.NON_RETRYABLE_FAILURE, undefined, refusalFromProblem(problem));
    const answer = await failureToProblem(updateFailed(activity), ctx);
    expect(answer).toMatchObject({ status: 409, code: 'insufficient_stock', detail: 'Not enough stock', suggestion: 'Order fewer.', extensions: { sku: 'A', requested: 2, available: 1 } });
  });

  it('a validation refusal is 422 naming its field; an unlisted failure is left to the caller', async () => {
    const invalid = await failureToProblem(updateFailed(refuse(REFUSALS.validationFailed, 'resumes_at must be in the future.', { path: 'resumes_at' })), ctx);
    expect(invalid).toMatchObject({ status: 422, code: 'validation_failed', errors: [{ path: 'resumes_at' }] });
    expect(await failureToProblem(updateFailed(ApplicationFailure.create({ type: 'Bug', message: 'x' })), ctx)).toBeUndefined();
    expect(await failureToProblem(new Error('outage'), ctx)).toBeUndefined();
  });
});
