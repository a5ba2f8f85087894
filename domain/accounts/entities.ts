import { defineEntity, p, type InferEntity } from '@mikro-orm/core';

export const ACCOUNT_TIERS = ['standard', 'premium'] as const;
export type AccountTier = (typeof ACCOUNT_TIERS)[number];

export const Account = defineEntity({
  name: 'Account',
  tableName: 'accounts',
  properties: {
    id: p.string().primary(),
    name: p.text(),
    tier: p.enum(ACCOUNT_TIERS).default('standard'),
    isDefault: p.boolean().default(false),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});
export type Account = InferEntity<typeof Account>;

export const KEY_TYPES = ['live', 'test', 'restricted'] as const;
export type KeyType = (typeof KEY_TYPES)[number];
export const KEY_STATUSES = ['active', 'revoked'] as const;
export type KeyStatus = (typeof KEY_STATUSES)[number];

export const ApiKey = defineEntity({
  name: 'ApiKey',
  tableName: 'api_keys',
  properties: {
    id: p.string().primary(),
    accountId: p.string(),
    name: p.text(),
    type: p.enum(KEY_TYPES),
    livemode: p.boolean(),
    /** SHA-256 of the full key text, hex. The text itself is never stored. */
    keyHash: p.string().unique(),
    masked: p.text(),
    permissions: p.array().$type<string[]>(),
    status: p.enum(KEY_STATUSES).default('active'),
    lastUsedAt: p.datetime().nullable(),
    expiresAt: p.datetime().nullable(),
    revokedAt: p.datetime().nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});
export type ApiKey = InferEntity<typeof ApiKey>;
