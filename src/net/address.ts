// The SSRF guard's address test: which IP addresses a protocol source may never reach.
import { isIPv4, isIPv6 } from 'node:net';

/** A URL hostname without the brackets of an IPv6 literal (`[::1]` → `::1`). */
export function stripBrackets(hostname: string): string {
  return hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
}

const FORBIDDEN_IPV4: readonly (readonly [string, number])[] = [
  ['0.0.0.0', 8], // "this network", unspecified
  ['10.0.0.0', 8], // private
  ['100.64.0.0', 10], // carrier-grade NAT (Alibaba Cloud's metadata 100.100.100.200 lives here)
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local, cloud metadata 169.254.169.254
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // IETF protocol assignments (Oracle Cloud's metadata 192.0.0.192)
  ['192.0.2.0', 24], // documentation
  ['192.88.99.0', 24], // 6to4 relay anycast, deprecated
  ['192.168.0.0', 16], // private
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // documentation
  ['203.0.113.0', 24], // documentation
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
];

// Public-looking addresses that only answer from inside a cloud: Azure's wire server.
const METADATA_IPV4 = new Set(['168.63.129.16']);

function ipv4Number(address: string): number | undefined {
  if (!isIPv4(address)) return undefined;
  return address.split('.').reduce((value, part) => value * 256 + Number(part), 0);
}

const FORBIDDEN_IPV4_RANGES = FORBIDDEN_IPV4.map(([base, length]) => {
  const size = 2 ** (32 - length);
  const start = ipv4Number(base) ?? 0;
  return { start, end: start + size - 1 };
});

function isForbiddenIPv4(value: number): boolean {
  const dotted = [value >>> 24, (value >>> 16) & 255, (value >>> 8) & 255, value & 255].join('.');
  if (METADATA_IPV4.has(dotted)) return true;
  return FORBIDDEN_IPV4_RANGES.some(({ start, end }) => value >= start && value <= end);
}

// The 16 bytes of an IPv6 address, dotted IPv4 tail (`::ffff:1.2.3.4`) included.
function ipv6Bytes(address: string): number[] | undefined {
  if (!isIPv6(address)) return undefined;
  let text = address;
  const lastColon = text.lastIndexOf(':');
  const tail = ipv4Number(text.slice(lastColon + 1));
  if (tail !== undefined) {
    text = `${text.slice(0, lastColon + 1)}${(tail >>> 16).toString(16)}:${(tail & 0xffff).toString(16)}`;
  }
  const [head = '', rest] = text.split('::');
  const headGroups = head === '' ? [] : head.split(':');
  const restGroups = rest === undefined || rest === '' ? [] : rest.split(':');
  const missing = 8 - headGroups.length - restGroups.length;
  if (missing < 0 || (rest === undefined && missing !== 0)) return undefined;
  const groups = [...headGroups, ...Array<string>(missing).fill('0'), ...restGroups];
  return groups.flatMap((group) => {
    const value = Number.parseInt(group, 16);
    return [value >>> 8, value & 255];
  });
}

function hasPrefix(bytes: readonly number[], prefix: readonly number[], bits: number): boolean {
  for (let bit = 0; bit < bits; bit += 8) {
    const remaining = Math.min(8, bits - bit);
    const mask = (0xff << (8 - remaining)) & 0xff;
    if (((bytes[bit / 8] ?? 0) & mask) !== ((prefix[bit / 8] ?? 0) & mask)) return false;
  }
  return true;
}

function embeddedIPv4(bytes: readonly number[], offset: number): number {
  return (
    (bytes[offset] ?? 0) * 2 ** 24 +
    (bytes[offset + 1] ?? 0) * 2 ** 16 +
    (bytes[offset + 2] ?? 0) * 2 ** 8 +
    (bytes[offset + 3] ?? 0)
  );
}

const IPV4_MAPPED = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff];
const NAT64 = [0x00, 0x64, 0xff, 0x9b];
const SIX_TO_FOUR = [0x20, 0x02];
const GLOBAL_UNICAST = [0x20];
// Inside 2000::/3, still not a web server on the internet.
const FORBIDDEN_GLOBAL_IPV6: readonly (readonly [readonly number[], number])[] = [
  [[0x20, 0x01, 0x00, 0x00], 23], // IETF protocol assignments, Teredo tunnels included
  [[0x20, 0x01, 0x0d, 0xb8], 32], // documentation
  [[0x3f, 0xff], 20], // documentation (RFC 9637)
];

function isForbiddenIPv6(bytes: readonly number[]): boolean {
  // Addresses that carry an IPv4 address are judged by it: ::ffff:127.0.0.1 is loopback in disguise.
  if (hasPrefix(bytes, IPV4_MAPPED, 96)) return isForbiddenIPv4(embeddedIPv4(bytes, 12));
  if (hasPrefix(bytes, NAT64, 96)) return isForbiddenIPv4(embeddedIPv4(bytes, 12));
  if (hasPrefix(bytes, SIX_TO_FOUR, 16)) return isForbiddenIPv4(embeddedIPv4(bytes, 2));
  // Only global unicast reaches the internet; outside it lie ::, ::1, fc00::/7 (fd00:ec2::254, AWS metadata),
  // fe80::/10, fec0::/10, ff00::/8, 100::/64 and the other reserved blocks.
  if (!hasPrefix(bytes, GLOBAL_UNICAST, 3)) return true;
  return FORBIDDEN_GLOBAL_IPV6.some(([prefix, bits]) => hasPrefix(bytes, prefix, bits));
}

/**
 * Whether an IP address (v4 or v6, including IPv4-mapped IPv6 like ::ffff:127.0.0.1 and ::ffff:7f00:1) is loopback,
 * private (10/8, 172.16/12, 192.168/16, 100.64/10 CGNAT, fc00::/7), link-local (169.254/16, fe80::/10), unspecified
 * (0.0.0.0/8, ::), multicast/reserved, or a metadata address (169.254.169.254, fd00:ec2::254). Anything that is not an
 * IP address counts as forbidden, so a caller's mistake fails closed.
 * @example isForbiddenAddress('::ffff:7f00:1') // true
 */
export function isForbiddenAddress(address: string): boolean {
  const text = stripBrackets(address.trim());
  const ipv4 = ipv4Number(text);
  if (ipv4 !== undefined) return isForbiddenIPv4(ipv4);
  // A zone (`fe80::1%eth0`) only ever qualifies a link-local address; the address itself decides.
  const bytes = ipv6Bytes(text.split('%')[0] ?? '');
  return bytes === undefined ? true : isForbiddenIPv6(bytes);
}
