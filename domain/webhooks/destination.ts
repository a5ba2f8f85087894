import { lookup as dnsLookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';

/**
 * The SSRF guard. Live mode delivers only over https and only to public addresses. Test mode
 * does the same unless the server runs with WEBHOOK_ALLOW_PRIVATE_NETWORKS=true, which lets
 * test-mode endpoints use plain http and private or loopback addresses (development, tests).
 * Link-local (169.254.0.0/16 with the cloud metadata services, fe80::/10) and reserved ranges
 * are refused in every mode. Names are checked after DNS resolution, at every attempt, and the
 * connection is pinned to the checked addresses (see sender.ts), so a name cannot resolve to a
 * public address for the check and a private one for the connection.
 */
export type AddressClass = 'public' | 'private' | 'loopback' | 'link_local' | 'reserved';

export interface DestinationPolicy {
  livemode: boolean;
  allowPrivateNetworks: boolean;
  /** Addresses allowed in every mode whatever their class: a test's loopback receiver (never from configuration). */
  allowAddresses?: readonly string[];
}

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

export const systemResolver: Resolver = async (hostname) =>
  (await dnsLookup(hostname, { all: true, verbatim: true })).map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));

export class DestinationRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DestinationRefused';
  }
}

function blockList(v4: string[], v6: string[]): BlockList {
  const list = new BlockList();
  for (const cidr of v4) {
    const [net, bits] = cidr.split('/');
    list.addSubnet(net!, Number(bits), 'ipv4');
  }
  for (const cidr of v6) {
    const [net, bits] = cidr.split('/');
    list.addSubnet(net!, Number(bits), 'ipv6');
  }
  return list;
}

const LOOPBACK = blockList(['127.0.0.0/8'], ['::1/128']);
const LINK_LOCAL = blockList(['169.254.0.0/16'], ['fe80::/10']);
const PRIVATE = blockList(['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '100.64.0.0/10'], ['fc00::/7', 'fec0::/10']);
const RESERVED = blockList(
  ['0.0.0.0/8', '192.0.0.0/24', '192.0.2.0/24', '198.18.0.0/15', '198.51.100.0/24', '203.0.113.0/24', '224.0.0.0/4', '240.0.0.0/4'],
  // Unspecified and IPv4-compatible, IPv4-translated (SIIT), local-use NAT64, Teredo (a tunnel whose
  // endpoint is an obfuscated IPv4 address), discard, documentation, multicast.
  ['::/96', '::ffff:0:0:0/96', '64:ff9b:1::/48', '2001::/32', '100::/64', '2001:db8::/32', 'ff00::/8'],
);

/** The 16 bytes of an IPv6 address (`::` compression and a trailing dotted IPv4 part allowed); null if it is not one. */
export function ipv6Bytes(address: string): Uint8Array | null {
  if (isIP(address) !== 6) return null;
  let text = address;
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.includes('::') ? text.split('::') as [string, string] : [text, null];
  const groups = (part: string) => (part === '' ? [] : part.split(':').map((g) => parseInt(g, 16)));
  const front = groups(head);
  const back = tail === null ? [] : groups(tail);
  const all = [...front, ...new Array<number>(8 - front.length - back.length).fill(0), ...back];
  const bytes = new Uint8Array(16);
  all.forEach((g, i) => {
    bytes[2 * i] = g >> 8;
    bytes[2 * i + 1] = g & 0xff;
  });
  return bytes;
}

const startsWith = (bytes: Uint8Array, prefix: number[]) => prefix.every((b, i) => bytes[i] === b);
const ipv4At = (bytes: Uint8Array, at: number) => Array.from(bytes.subarray(at, at + 4)).join('.');

/**
 * The IPv4 address an IPv6 address carries, where packets to it reach that IPv4 host:
 * IPv4-mapped `::ffff:0:0/96` (a dual-stack socket connects to the IPv4 address itself), NAT64
 * `64:ff9b::/96` (a translator forwards to it) and 6to4 `2002::/16` (a relay tunnels to it).
 */
export function embeddedIpv4(address: string): { kind: 'mapped' | 'nat64' | '6to4'; ipv4: string } | null {
  const bytes = ipv6Bytes(address);
  if (!bytes) return null;
  if (startsWith(bytes, [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff])) return { kind: 'mapped', ipv4: ipv4At(bytes, 12) };
  if (startsWith(bytes, [0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0])) return { kind: 'nat64', ipv4: ipv4At(bytes, 12) };
  if (startsWith(bytes, [0x20, 0x02])) return { kind: '6to4', ipv4: ipv4At(bytes, 2) };
  return null;
}

/**
 * What kind of address `ip` is. IPv6 addresses that carry an IPv4 address are judged by it:
 * IPv4-mapped ones exactly as that IPv4 address; NAT64 and 6to4 ones as public when it is public,
 * else as reserved (refused in every mode: a translated or tunnelled route to a private host is
 * never a legitimate endpoint). Teredo is reserved.
 */
export function classifyAddress(ip: string): AddressClass {
  const address = ip.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  const family = isIP(address);
  if (family === 0) return 'reserved';
  if (family === 6) {
    const embedded = embeddedIpv4(address);
    if (embedded) {
      const cls = classifyAddress(embedded.ipv4);
      return embedded.kind === 'mapped' || cls === 'public' ? cls : 'reserved';
    }
  }
  const type = family === 4 ? 'ipv4' : 'ipv6';
  if (LOOPBACK.check(address, type)) return 'loopback';
  if (LINK_LOCAL.check(address, type)) return 'link_local';
  if (PRIVATE.check(address, type)) return 'private';
  if (RESERVED.check(address, type)) return 'reserved';
  return 'public';
}

const CLASS_NAMES: Record<AddressClass, string> = {
  public: 'a public address',
  private: 'a private-network address',
  loopback: 'a loopback address',
  link_local: 'a link-local address (such as the cloud metadata service)',
  reserved: 'a reserved or non-routable address',
};

function allowed(cls: AddressClass, policy: DestinationPolicy): boolean {
  if (cls === 'public') return true;
  return !policy.livemode && policy.allowPrivateNetworks && (cls === 'private' || cls === 'loopback');
}

function refusal(host: string, ip: string, cls: AddressClass, policy: DestinationPolicy): DestinationRefused {
  const shown = host === ip ? ip : `${host} (resolves to ${ip})`;
  const why = policy.livemode
    ? 'live mode delivers only to public addresses'
    : policy.allowPrivateNetworks
      ? 'link-local and reserved addresses are refused in every mode'
      : 'this server does not allow private networks for test-mode endpoints (WEBHOOK_ALLOW_PRIVATE_NETWORKS)';
  return new DestinationRefused(`${shown} is ${CLASS_NAMES[cls]}; ${why}`);
}

/** Checks what can be checked without DNS: scheme, credentials, and a literal IP address host. */
export function checkUrl(raw: string, policy: DestinationPolicy): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new DestinationRefused('not an absolute URL such as https://example.com/webhooks');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new DestinationRefused('the URL must use https');
  if (url.protocol === 'http:') {
    if (policy.livemode) throw new DestinationRefused('live-mode endpoints must use https');
    if (!policy.allowPrivateNetworks) throw new DestinationRefused('endpoints must use https (plain http is only allowed for test-mode endpoints on servers with WEBHOOK_ALLOW_PRIVATE_NETWORKS=true)');
  }
  if (url.username || url.password) throw new DestinationRefused('the URL must not carry credentials; authenticate deliveries with the signature instead');
  const host = hostOf(url);
  if (isIP(host)) {
    const cls = classifyAddress(host);
    if (!allowed(cls, policy)) throw refusal(host, host, cls, policy);
  } else if (host === 'localhost' || host.endsWith('.localhost')) {
    if (!allowed('loopback', policy)) throw refusal(host, '127.0.0.1', 'loopback', policy);
  }
  return url;
}

/** The URL's host without IPv6 brackets. */
export function hostOf(url: URL): string {
  return url.hostname.replace(/^\[|\]$/g, '');
}

/**
 * Resolves the URL's host and checks every address it resolves to (one forbidden address
 * refuses the whole name, so a round-robin record cannot sneak one in). Returns the checked
 * addresses, which the connection must then use.
 */
export async function resolveDestination(url: URL, policy: DestinationPolicy, resolver: Resolver = systemResolver): Promise<ResolvedAddress[]> {
  const host = hostOf(url);
  const family = isIP(host);
  let addresses: ResolvedAddress[];
  if (family) {
    addresses = [{ address: host, family: family === 6 ? 6 : 4 }];
  } else {
    try {
      addresses = await resolver(host);
    } catch (err) {
      throw new DestinationRefused(`${host} does not resolve (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
    }
    if (addresses.length === 0) throw new DestinationRefused(`${host} does not resolve to any address`);
  }
  for (const a of addresses) {
    if (policy.allowAddresses?.includes(a.address)) continue;
    const cls = classifyAddress(a.address);
    if (!allowed(cls, policy)) throw refusal(host, a.address, cls, policy);
  }
  return addresses;
}
