import { randomFillSync } from 'node:crypto';

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
  call: 'call',
  callLeg: 'leg',
  pbx: 'pbx',
  pbxExtension: 'ext',
  phoneNumber: 'pn',
  commsMessage: 'cmsg',
  commsAdminAction: 'cact',
  shipment: 'shp',
  pickup: 'pku',
  shippingClock: 'shclk',
  ledgerAccount: 'gla',
  financialTransaction: 'txn',
  exchangeRate: 'fxr',
  project: 'proj',
  vendor: 'ven',
  procurementOrder: 'po',
  procurementReceipt: 'rcpt',
  vendorBill: 'vbill',
  pickList: 'pick',
  warehouseTransfer: 'wtr',
  transferReceipt: 'wrc',
  cycleCount: 'cc',
  segment: 'seg',
  invoiceTemplate: 'itpl',
  routingRule: 'rrule',
  report: 'rpt',
  dashboardUser: 'usr',
  dashboardSession: 'dses',
  oauthClient: 'oac',
  signingKey: 'sigk',
  aiCall: 'aic',
} as const;

export type IdKind = keyof typeof ID_PREFIX;

export function newId(kind: IdKind): string {
  return `${ID_PREFIX[kind]}_${encodeBase32(nextUuidV7())}`;
}

const uuid = new Uint8Array(16);
const entropy = new Uint8Array(4096);
let entropyUsed = entropy.length;
let lastMs = -1;
let sequence = 0;

function randomBytes(n: number): number {
  if (entropyUsed + n > entropy.length) {
    randomFillSync(entropy);
    entropyUsed = 0;
  }
  entropyUsed += n;
  return entropyUsed - n;
}

/**
 * The next UUIDv7 (RFC 9562) of this process: 48 bits of Unix milliseconds, then a 32-bit sequence
 * that starts at a random value each millisecond and counts up within it (a wrap borrows the next
 * millisecond), then random bits. So the ids of one process sort in the order they were made.
 */
function nextUuidV7(): Uint8Array {
  const now = Date.now();
  if (now > lastMs) {
    const r = randomBytes(4);
    sequence = ((entropy[r]! & 0x7f) << 24) | (entropy[r + 1]! << 16) | (entropy[r + 2]! << 8) | entropy[r + 3]!;
    lastMs = now;
  } else {
    sequence = (sequence + 1) | 0;
    if (sequence === 0) lastMs++;
  }
  const ms = lastMs;
  const high = Math.floor(ms / 0x1_0000_0000);
  uuid[0] = (high >>> 8) & 0xff;
  uuid[1] = high & 0xff;
  uuid[2] = (ms >>> 24) & 0xff;
  uuid[3] = (ms >>> 16) & 0xff;
  uuid[4] = (ms >>> 8) & 0xff;
  uuid[5] = ms & 0xff;
  const r = randomBytes(6);
  uuid[6] = 0x70 | ((sequence >>> 28) & 0x0f);
  uuid[7] = (sequence >>> 20) & 0xff;
  uuid[8] = 0x80 | ((sequence >>> 14) & 0x3f);
  uuid[9] = (sequence >>> 6) & 0xff;
  uuid[10] = ((sequence << 2) & 0xff) | (entropy[r]! & 0x03);
  uuid.set(entropy.subarray(r + 1, r + 6), 11);
  return uuid;
}

const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';

/** TypeID's suffix: the 128 bits after two zero bits, as 26 Crockford base32 characters (lowercase). */
function encodeBase32(bytes: Uint8Array): string {
  let out = '';
  let acc = 0;
  let bits = 2;
  for (const byte of bytes) {
    acc = ((acc << 8) | byte) & 0xfff;
    bits += 8;
    while (bits >= 5) {
      bits -= 5;
      out += ALPHABET[(acc >>> bits) & 31];
    }
  }
  return out;
}

const TYPEID_SUFFIX = /^[0-7][0-9a-hjkmnp-tv-z]{25}$/;

/** True when `value` looks like an id of the given kind (cheap check before a lookup). */
export function isId(kind: IdKind, value: string): boolean {
  const prefix = `${ID_PREFIX[kind]}_`;
  return value.startsWith(prefix) && TYPEID_SUFFIX.test(value.slice(prefix.length));
}
