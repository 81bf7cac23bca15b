// @ts-check
/**
 * A 32-bit generator (mulberry32) of numbers in [0, 1): the same seed, the same numbers on every machine, so a
 * seeded schedule (short TCP flows, a kill campaign) can be replayed.
 * @param {number} seed
 * @returns {() => number}
 */
export function mulberry32(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
