import { defineEntity, p, type InferEntity } from '@mikro-orm/core';

/** A request made with an `Idempotency-Key`, kept 24 hours per key + account + mode. */
export const IdempotencyRecord = defineEntity({
  name: 'IdempotencyRecord',
  tableName: 'idempotency_records',
  properties: {
    accountId: p.string().primary(),
    livemode: p.boolean().primary(),
    key: p.text().primary(),
    /** SHA-256 over method, path and body: the same key with another request is refused. */
    fingerprint: p.string(),
    state: p.enum(['in_progress', 'completed', 'released'] as const),
    /** The API instance that holds an in-progress claim (it holds a session advisory lock while it lives). */
    owner: p.text().nullable(),
    /** The id of the resource the request creates, chosen by its first attempt and reused by every retry. */
    resourceId: p.text().nullable(),
    responseStatus: p.smallint().nullable(),
    responseHeaders: p.json<Record<string, string>>().nullable(),
    responseBody: p.blob().nullable(),
    /** While in progress: when the owner's claim lapses (a crashed owner frees the key). */
    lockedUntil: p.datetime(),
    createdAt: p.datetime().onCreate(() => new Date()),
    expiresAt: p.datetime(),
  },
  primaryKeys: ['accountId', 'livemode', 'key'],
});
export type IdempotencyRecord = InferEntity<typeof IdempotencyRecord>;
