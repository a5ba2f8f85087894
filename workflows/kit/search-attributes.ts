/**
 * The search attributes every workflow-backed resource carries, so ops staff can find any business
 * object's process in the Temporal UI: account, mode, customer, resource id and the resource's
 * current status. Defined once, typed; registered with the server by platform/temporal-dev-server.ts
 * (development) and docker-compose.yml (production-like). Pure: the client sets them at start
 * (platform/temporal-kit.ts), workflows keep `BpStatus` current with `recordStatus`.
 */
import { defineSearchAttributeKey, SearchAttributeType, type SearchAttributePair } from '@temporalio/common';
import { patched, upsertSearchAttributes } from '@temporalio/workflow';

export const BP_SEARCH_ATTRIBUTES = {
  accountId: defineSearchAttributeKey('BpAccountId', SearchAttributeType.KEYWORD),
  mode: defineSearchAttributeKey('BpMode', SearchAttributeType.KEYWORD),
  customerId: defineSearchAttributeKey('BpCustomerId', SearchAttributeType.KEYWORD),
  resourceId: defineSearchAttributeKey('BpResourceId', SearchAttributeType.KEYWORD),
  status: defineSearchAttributeKey('BpStatus', SearchAttributeType.KEYWORD),
} as const;

/** Names and types, for registering them with a server. */
export const SEARCH_ATTRIBUTE_TYPES: Record<string, 'Keyword'> = Object.fromEntries(
  Object.values(BP_SEARCH_ATTRIBUTES).map((key) => [key.name, 'Keyword']),
);

export interface ResourceAttributes {
  accountId: string;
  livemode: boolean;
  customerId?: string | null;
  /** The resource the workflow is about (for an automation run, its rule). */
  resourceId: string;
  /** The resource's status when the workflow starts. */
  status?: string;
}

/** The typed search attributes of a workflow about one resource. */
export function resourceSearchAttributes(a: ResourceAttributes): SearchAttributePair[] {
  const K = BP_SEARCH_ATTRIBUTES;
  return [
    { key: K.accountId, value: a.accountId },
    { key: K.mode, value: a.livemode ? 'live' : 'test' },
    ...(a.customerId ? [{ key: K.customerId, value: a.customerId }] : []),
    { key: K.resourceId, value: a.resourceId },
    ...(a.status ? [{ key: K.status, value: a.status }] : []),
  ];
}

/**
 * Keeps `BpStatus` equal to the resource's status (workflow code only). Runs recorded before the
 * status attribute existed replay without it (the `patched` marker).
 */
export function recordStatus(status: string): void {
  if (patched('bp-status-search-attribute')) upsertSearchAttributes([{ key: BP_SEARCH_ATTRIBUTES.status, value: status }]);
}
