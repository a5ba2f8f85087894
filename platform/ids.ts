import { typeidUnboxed } from 'typeid-js';

/**
 * Identifier prefixes, one per kind of record. Ids are TypeIDs: the prefix, an underscore and a
 * base32 UUIDv7, so they sort by creation time (lists page on the id alone).
 */
export const ID_PREFIX = {
  account: 'acct',
  apiKey: 'key',
  customer: 'cus',
  event: 'evt',
  request: 'req',
  webhookEndpoint: 'whk',
  webhookDelivery: 'whd',
  payment: 'pay',
  refund: 're',
  transfer: 'tr',
  store: 'store',
  product: 'prod',
  warehouse: 'wh',
  order: 'ord',
  listing: 'lst',
  interaction: 'int',
  touchpoint: 'tp',
  automationRule: 'arule',
  automationRun: 'arun',
  task: 'task',
  message: 'msg',
  plan: 'plan',
  subscription: 'sub',
  invoice: 'inv',
  testClock: 'clock',
  usageRecord: 'ur',
  taxRate: 'txr',
} as const;

export type IdKind = keyof typeof ID_PREFIX;

export function newId(kind: IdKind): string {
  return typeidUnboxed(ID_PREFIX[kind]);
}

const TYPEID_SUFFIX = /^[0-7][0-9a-hjkmnp-tv-z]{25}$/;

/** True when `value` looks like an id of the given kind (cheap check before a lookup). */
export function isId(kind: IdKind, value: string): boolean {
  const prefix = `${ID_PREFIX[kind]}_`;
  return value.startsWith(prefix) && TYPEID_SUFFIX.test(value.slice(prefix.length));
}
