// @ts-check
// The naming convention of a run: everything a run creates is found again from its id
// (so a crashed run can be cleaned up by id, and two runs never collide).
import { randomBytes } from 'node:crypto';

export const ID_RE = /^[a-z0-9]{6}$/;
/** Namespaces of a run: rtclab-<id>-a|r|b, and -p for the kernel probe's scratch namespace. */
export const NS_RE = /^rtclab-([a-z0-9]{6})-([arbp])$/;
/** Root-side management veths: rl<id>a, rl<id>b. */
export const ROOT_VETH_RE = /^rl([a-z0-9]{6})[ab]$/;
/** nftables table of a run in the root namespace (family inet). */
export const NFT_TABLE_RE = /^rtclab_([a-z0-9]{6})$/;
/** Where the CLI keeps the state of networks it left up, and detached processes' logs. */
export const STATE_DIR = '/run/rtclab';
/** The uml backend's guests: /run/rtclab-uml/<id>/ holds a guest's command channel and UML's own umid directory. */
export const UML_DIR = '/run/rtclab-uml';

export function newId() {
  const alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789';
  return Array.from(randomBytes(6), (b) => alphabet[b % alphabet.length]).join('');
}

/** @param {string} id */
export function checkId(id) {
  if (!ID_RE.test(id)) throw new Error(`run id "${id}" must be 6 characters [a-z0-9]`);
  return id;
}

/**
 * @param {string} id
 * @param {'a'|'r'|'b'|'p'} host
 */
export const nsName = (id, host) => `rtclab-${id}-${host}`;

/** @param {string} id */
export function names(id) {
  checkId(id);
  return {
    namespaces: { a: nsName(id, 'a'), r: nsName(id, 'r'), b: nsName(id, 'b') },
    rootVeths: { a: `rl${id}a`, b: `rl${id}b` },
    nftTable: `rtclab_${id}`,
  };
}

/** Data-path addresses and interface names: the same in every run (they live inside the run's namespaces). */
/** Every data-path address starts with this: media on a candidate pair elsewhere did not cross the bottleneck. */
export const DATA_PREFIX = '10.0.';
/** Every management address starts with this (signaling only; Chrome must not resolve names there either). */
export const MGMT_PREFIX = '10.99.';
export const DATA = Object.freeze({ a: '10.0.1.2', b: '10.0.2.2', r_a: '10.0.1.1', r_b: '10.0.2.1' });
export const INTERFACES = Object.freeze({ a: 'a-eth0', r_a: 'r-eth0', r_b: 'r-eth1', b: 'b-eth0' });
/** Management interface inside a and b. */
export const MGMT_IF = 'm-eth0';

/**
 * Management addresses of subnet index n: two /30s, 10.99.n.0/30 (root .1, a .2) and 10.99.n.4/30 (root .5, b .6).
 * @param {number} n
 */
export function mgmtAddresses(n) {
  if (!Number.isInteger(n) || n < 0 || n > 255) throw new Error(`management subnet index ${n} out of 0..255`);
  return { a: { root: `10.99.${n}.1`, host: `10.99.${n}.2` }, b: { root: `10.99.${n}.5`, host: `10.99.${n}.6` } };
}
