import { BlockList, isIPv4, isIPv6 } from "node:net";

/**
 * Addresses a program must not reach through the egress proxy even by a listed name: this machine
 * (loopback, "this network"), the networks around it (private, carrier-grade NAT, link-local, where
 * cloud metadata answers on 169.254.169.254) and what is not one host (multicast, reserved). A name
 * the user lists could resolve there by mistake or by a hostile DNS answer; the proxy checks the
 * address it is about to connect to, so no later answer can change it.
 */
const NOT_PUBLIC: readonly [address: string, prefix: number, family: "ipv4" | "ipv6"][] = [
  ["0.0.0.0", 8, "ipv4"],
  ["10.0.0.0", 8, "ipv4"],
  ["100.64.0.0", 10, "ipv4"],
  ["127.0.0.0", 8, "ipv4"],
  ["169.254.0.0", 16, "ipv4"],
  ["172.16.0.0", 12, "ipv4"],
  ["192.0.0.0", 24, "ipv4"],
  ["192.168.0.0", 16, "ipv4"],
  ["198.18.0.0", 15, "ipv4"],
  ["224.0.0.0", 4, "ipv4"],
  ["240.0.0.0", 4, "ipv4"],
  // The unspecified and loopback addresses, and the old IPv4-compatible form (::a.b.c.d).
  ["::", 96, "ipv6"],
  ["fc00::", 7, "ipv6"],
  ["fe80::", 10, "ipv6"],
  ["fec0::", 10, "ipv6"],
  ["ff00::", 8, "ipv6"],
];

const notPublic = new BlockList();
for (const [address, prefix, family] of NOT_PUBLIC) notPublic.addSubnet(address, prefix, family);

/**
 * True for an address in a private, loopback, link-local, unique-local or otherwise non-public
 * range, IPv4 or IPv6; an IPv4-mapped IPv6 address (::ffff:127.0.0.1) counts as the IPv4 address it
 * carries. Anything that is not an IP address counts as private: the caller connects to nothing it
 * cannot classify.
 */
export function isPrivateAddress(address: string): boolean {
  if (isIPv4(address)) return notPublic.check(address, "ipv4");
  if (!isIPv6(address)) return true;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
  if (mapped !== undefined) return isPrivateAddress(mapped);
  return notPublic.check(address, "ipv6");
}
