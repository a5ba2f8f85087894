import { newId } from '../../platform/ids.ts';

/**
 * The rewards area's id prefixes. Ids are the platform's TypeIDs (a time-sortable UUIDv7 body,
 * platform/ids.ts) under the area's own prefixes; the body is borrowed from a fresh platform id,
 * so the area needs no change to the shared prefix table.
 */
export const REWARDS_ID_PREFIX = {
  program: 'lprog',
  reward: 'rwd',
  grant: 'lgr',
  entry: 'lle',
  redemption: 'lrd',
  adminAction: 'lact',
} as const;

export type RewardsIdKind = keyof typeof REWARDS_ID_PREFIX;

/** Re-prefixes a platform id (`evt_<body>` → `rwd_<body>`). */
export function withPrefix(kind: RewardsIdKind, platformId: string): string {
  return `${REWARDS_ID_PREFIX[kind]}_${platformId.slice(platformId.indexOf('_') + 1)}`;
}

export function rewardsId(kind: RewardsIdKind): string {
  return withPrefix(kind, newId('event'));
}
