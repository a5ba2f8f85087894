import { defineEntity, p, type InferEntity } from '@mikro-orm/core';

/** One row per /v3 request, written in batches off the request path (`requests/log-buffer.ts`). */
export const RequestLog = defineEntity({
  name: 'RequestLog',
  tableName: 'request_logs',
  properties: {
    id: p.bigint().primary().autoincrement(),
    requestId: p.string(),
    accountId: p.string().nullable(),
    apiKeyId: p.string().nullable(),
    livemode: p.boolean().nullable(),
    method: p.string(),
    path: p.text(),
    status: p.smallint(),
    durationMs: p.double(),
    /** The problem document answered, for failed requests (the dashboard shows it). */
    problem: p.json<Record<string, unknown>>().nullable(),
    createdAt: p.datetime(),
  },
});
export type RequestLog = InferEntity<typeof RequestLog>;

/** Per key and UTC day: what the dashboard shows (requests today, average time, success rate). */
export const ApiKeyDailyUsage = defineEntity({
  name: 'ApiKeyDailyUsage',
  tableName: 'api_key_daily_usage',
  properties: {
    apiKeyId: p.string().primary(),
    day: p.date().primary(),
    requests: p.integer().default(0),
    errors: p.integer().default(0),
    totalDurationMs: p.double().default(0),
  },
  primaryKeys: ['apiKeyId', 'day'],
});
export type ApiKeyDailyUsage = InferEntity<typeof ApiKeyDailyUsage>;
