/**
 * Workflow ids of workflow-backed resources: `<kind>-<resource id>` (`subscription-sub_…`,
 * `payment-pay_…`, `order-ord_…`). Readable in the Temporal UI and deterministic, so a repeated
 * start reaches the same workflow instead of running a second one. Pure: workflows import it.
 */
export interface WorkflowIds {
  /** The workflow id of resource `resourceId`. */
  id(resourceId: string): string;
  /** The resource id in a workflow id of this kind, or null for any other id. */
  parse(workflowId: string): string | null;
}

export function workflowIds(kind: string): WorkflowIds {
  const prefix = `${kind}-`;
  return {
    id: (resourceId) => `${prefix}${resourceId}`,
    parse: (workflowId) => (workflowId.startsWith(prefix) && workflowId.length > prefix.length ? workflowId.slice(prefix.length) : null),
  };
}
