import dns from 'node:dns';
import net from 'node:net';

/**
 * The spec's webhook URL rules: https, no credentials, resolving to a public address,
 * refused at create time. `allowPrivateTargets` (tests, the local demo) admits loopback
 * and private targets, and plain http to those targets only.
 */
export type LookupAll = (hostname: string) => Promise<Array<{ address: string; family: number }>>;

export const systemLookup: LookupAll = (hostname) => dns.promises.lookup(hostname, { all: true, verbatim: true });

export type UrlRefusal = 'invalid_url' | 'scheme_not_allowed' | 'credentials_in_url' | 'unresolvable_host' | 'non_public_address';

export type UrlCheck = { ok: true; url: string } | { ok: false; reason: UrlRefusal; message: string };

export interface UrlPolicyOptions {
  allowPrivateTargets: boolean;
  lookup?: LookupAll;
}

const MAX_URL_LENGTH = 2048;

/** Ranges that are not the public internet: private, loopback, link-local, CGNAT, documentation, multicast, reserved. */
const NON_PUBLIC = new net.BlockList();
for (const [net4, bits] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  NON_PUBLIC.addSubnet(net4, bits, 'ipv4');
}
for (const [net6, bits] of [
  ['::', 128],
  ['::1', 128],
  ['100::', 64],
  ['2001::', 23],
  ['2001:db8::', 32],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
] as const) {
  NON_PUBLIC.addSubnet(net6, bits, 'ipv6');
}

/** Expands an IPv6 literal to eight 16-bit groups (accepts an embedded dotted quad). */
function ipv6Groups(address: string): number[] | undefined {
  let text = address.toLowerCase();
  const zone = text.indexOf('%');
  if (zone !== -1) text = text.slice(0, zone);
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const parts = dotted[1]!.split('.').map(Number);
    text = `${text.slice(0, dotted.index)}${((parts[0]! << 8) | parts[1]!).toString(16)}:${((parts[2]! << 8) | parts[3]!).toString(16)}`;
  }
  const halves = text.split('::');
  if (halves.length > 2) return undefined;
  const head = halves[0] ? halves[0].split(':') : [];
  const tail = halves.length === 2 && halves[1] ? halves[1].split(':') : [];
  const missing = 8 - head.length - tail.length;
  if (halves.length === 1 ? missing !== 0 : missing < 0) return undefined;
  const groups = [...head, ...Array<string>(halves.length === 2 ? missing : 0).fill('0'), ...tail].map((g) => parseInt(g, 16));
  return groups.length === 8 && groups.every((g) => Number.isInteger(g) && g >= 0 && g <= 0xffff) ? groups : undefined;
}

/** The IPv4 address carried inside an IPv4-mapped, IPv4-compatible or NAT64 IPv6 address. */
function embeddedIpv4(groups: number[]): string | undefined {
  const [a, b, c, d, e, f, g, h] = groups as [number, number, number, number, number, number, number, number];
  const v4 = `${g >> 8}.${g & 0xff}.${h >> 8}.${h & 0xff}`;
  if (a === 0 && b === 0 && c === 0 && d === 0 && e === 0 && f === 0xffff) return v4; // ::ffff:a.b.c.d
  if (a === 0 && b === 0 && c === 0 && d === 0 && e === 0 && f === 0 && (g !== 0 || h > 1)) return v4; // ::a.b.c.d (deprecated)
  if (a === 0x64 && b === 0xff9b && c === 0 && d === 0 && e === 0 && f === 0) return v4; // 64:ff9b::/96
  return undefined;
}

export function isPublicAddress(address: string): boolean {
  const family = net.isIP(address);
  if (family === 4) return !NON_PUBLIC.check(address, 'ipv4');
  if (family !== 6) return false;
  const groups = ipv6Groups(address);
  if (!groups) return false;
  const v4 = embeddedIpv4(groups);
  if (v4 !== undefined) return !NON_PUBLIC.check(v4, 'ipv4');
  const canonical = groups.map((g) => g.toString(16)).join(':');
  return !NON_PUBLIC.check(canonical, 'ipv6');
}

export async function checkWebhookUrl(raw: unknown, options: UrlPolicyOptions): Promise<UrlCheck> {
  if (typeof raw !== 'string' || raw.trim() === '') return { ok: false, reason: 'invalid_url', message: 'url must be a non-empty string' };
  if (raw.length > MAX_URL_LENGTH) return { ok: false, reason: 'invalid_url', message: `url must be at most ${MAX_URL_LENGTH} characters` };
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, reason: 'invalid_url', message: 'url is not an absolute URL' };
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    return { ok: false, reason: 'scheme_not_allowed', message: `url must use https, not ${url.protocol.replace(':', '')}` };
  }
  if (url.username !== '' || url.password !== '')
    return { ok: false, reason: 'credentials_in_url', message: 'url must not carry credentials (user:password@)' };

  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  let addresses: string[];
  if (net.isIP(host)) {
    addresses = [host];
  } else {
    try {
      addresses = (await (options.lookup ?? systemLookup)(host)).map((a) => a.address);
    } catch {
      addresses = [];
    }
    if (addresses.length === 0) return { ok: false, reason: 'unresolvable_host', message: `url host ${host} does not resolve` };
  }
  // Every address must pass: a name with one public and one private record could be steered to the private one.
  const allPublic = addresses.every(isPublicAddress);
  if (!allPublic && !options.allowPrivateTargets) {
    return {
      ok: false,
      reason: 'non_public_address',
      message: `url host ${host} resolves to a private, loopback or otherwise non-public address`,
    };
  }
  if (url.protocol === 'http:' && (!options.allowPrivateTargets || allPublic)) {
    return {
      ok: false,
      reason: 'scheme_not_allowed',
      message: options.allowPrivateTargets
        ? 'url must use https; plain http is allowed only to private or loopback targets'
        : 'url must use https',
    };
  }
  return { ok: true, url: url.toString() };
}

/**
 * A `lookup` for net/tls connect that refuses non-public answers, so a name that
 * resolved publicly at create time cannot be re-pointed at an internal host later.
 */
export function publicOnlyLookup(lookup: typeof dns.lookup = dns.lookup): net.LookupFunction {
  return (hostname, options, callback) => {
    lookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, '', 0);
      const list = addresses as unknown as dns.LookupAddress[];
      const bad = list.find((a) => !isPublicAddress(a.address));
      if (bad || list.length === 0) {
        const refusal = Object.assign(new Error(`refused to connect to non-public address for ${hostname}`), { code: 'ENONPUBLIC' });
        return callback(refusal, '', 0);
      }
      if ((options as { all?: boolean }).all) return (callback as unknown as (e: null, a: dns.LookupAddress[]) => void)(null, list);
      const first = list[0]!;
      return callback(null, first.address, first.family);
    });
  };
}
