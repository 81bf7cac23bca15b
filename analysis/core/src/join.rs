//! Matches the packets that left one side to their arrivals at the other, by key and occurrence order: the k-th
//! departure with a key is the k-th arrival with that key. Keys are already hashes, so the map hashes them no more.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

#[derive(Default)]
struct KeyHasher(u64);
impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, _: &[u8]) {
        unreachable!("only u64 keys are hashed")
    }
    fn write_u64(&mut self, k: u64) {
        // Fold the high bits in: hashbrown takes its control bits from the top and its bucket from the bottom.
        self.0 = k ^ (k >> 29);
    }
}

const NONE: u32 = u32::MAX;

/// An arrival whose key some departure had, but every such departure was already matched: a duplicate.
pub const DUPLICATE: i64 = -2;
/// An arrival whose key no departure had (sent before the sending side's capture began, or not sent by it).
pub const UNMATCHED: i64 = -1;

/// Returns (for each sent packet the index of its arrival or -1, for each arrival the index of its departure, or
/// DUPLICATE, or UNMATCHED).
///
/// A hash map over millions of packets misses the cache on every access, so both sides are first split by the top
/// bits of the key into partitions of about 32 thousand packets (a stable split keeps occurrence order), and each
/// partition is joined with a map that fits in cache.
pub fn join_keys(sent: &[u64], recv: &[u64]) -> (Vec<i64>, Vec<i64>) {
    let mut sent_match = vec![-1i64; sent.len()];
    let mut recv_match = vec![UNMATCHED; recv.len()];
    let n = sent.len().max(recv.len());
    let bits = (n / 8_192).max(1).next_power_of_two().trailing_zeros().min(16);
    let (s_start, s_idx, s_keys) = partition(sent, bits);
    let (r_start, r_idx, r_keys) = partition(recv, bits);
    let mut lists: HashMap<u64, (u32, u32, u32), BuildHasherDefault<KeyHasher>> = HashMap::default();
    let mut next: Vec<u32> = Vec::new();
    for p in 0..(1usize << bits) {
        let rp = &r_idx[r_start[p]..r_start[p + 1]];
        let rk = &r_keys[r_start[p]..r_start[p + 1]];
        let sp = &s_idx[s_start[p]..s_start[p + 1]];
        let sk = &s_keys[s_start[p]..s_start[p + 1]];
        lists.clear();
        next.clear();
        next.resize(rp.len(), NONE);
        // Arrivals of each key as a linked list in arrival order: (head, tail, departures seen) in the map, links in
        // `next`, all as positions inside this partition.
        for (j, &k) in rk.iter().enumerate() {
            let j = j as u32;
            lists
                .entry(k)
                .and_modify(|e| {
                    next[e.1 as usize] = j;
                    e.1 = j;
                })
                .or_insert((j, j, 0));
        }
        for (&i, &k) in sp.iter().zip(sk) {
            if let Some(e) = lists.get_mut(&k) {
                e.2 += 1;
                if e.0 != NONE {
                    let j = e.0;
                    let r = rp[j as usize];
                    sent_match[i as usize] = r as i64;
                    recv_match[r as usize] = i as i64;
                    e.0 = next[j as usize];
                }
            }
        }
        for (&r, k) in rp.iter().zip(rk) {
            if recv_match[r as usize] == UNMATCHED && lists.get(k).is_some_and(|e| e.2 > 0) {
                recv_match[r as usize] = DUPLICATE;
            }
        }
    }
    (sent_match, recv_match)
}

/// Stable counting sort of `keys` by their top `bits` bits: returns (partition starts, original indices, keys), the
/// last two in partition order so that each partition is read sequentially.
fn partition(keys: &[u64], bits: u32) -> (Vec<usize>, Vec<u32>, Vec<u64>) {
    let parts = 1usize << bits;
    let shift = 64 - bits;
    let part_of = |k: u64| if bits == 0 { 0 } else { (k >> shift) as usize };
    let mut start = vec![0usize; parts + 1];
    for &k in keys {
        start[part_of(k) + 1] += 1;
    }
    for p in 0..parts {
        start[p + 1] += start[p];
    }
    let mut fill = start.clone();
    let mut idx = vec![0u32; keys.len()];
    let mut sorted = vec![0u64; keys.len()];
    for (i, &k) in keys.iter().enumerate() {
        let p = part_of(k);
        idx[fill[p]] = i as u32;
        sorted[fill[p]] = k;
        fill[p] += 1;
    }
    (start, idx, sorted)
}

/// Numbers the distinct values of `keys` in order of first appearance: returns (group of each element, index of each
/// group's first element). A hash map of the few distinct flows stays in cache, unlike a sort of all packets.
pub fn group_ids(keys: &[u64]) -> (Vec<u32>, Vec<i64>) {
    let mut ids: HashMap<u64, u32, BuildHasherDefault<KeyHasher>> = HashMap::default();
    let mut first = Vec::new();
    let mut out = Vec::with_capacity(keys.len());
    for (i, &k) in keys.iter().enumerate() {
        let next_id = ids.len() as u32;
        let id = *ids.entry(k).or_insert_with(|| {
            first.push(i as i64);
            next_id
        });
        out.push(id);
    }
    (out, first)
}

#[cfg(test)]
mod group_tests {
    use super::*;

    #[test]
    fn numbers_groups_in_order_of_first_appearance() {
        let (ids, first) = group_ids(&[7, 3, 7, 9, 3]);
        assert_eq!(ids, vec![0, 1, 0, 2, 1]);
        assert_eq!(first, vec![0, 1, 3]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_by_occurrence_and_leaves_losses_and_duplicates() {
        let sent = [10, 20, 30, 20, 40];
        let recv = [20, 10, 10, 20, 40, 99];
        let (s, r) = join_keys(&sent, &recv);
        assert_eq!(s, vec![1, 0, -1, 3, 4]);
        assert_eq!(r, vec![1, 0, DUPLICATE, 3, 4, UNMATCHED]);
    }

    #[test]
    fn partitioned_join_equals_the_plain_definition_on_many_keys() {
        // 200k departures with repeated keys, every 7th lost, every 11th duplicated, arrivals shuffled locally.
        let sent: Vec<u64> = (0..200_000u64).map(|i| (i % 150_000).wrapping_mul(0x9E37_79B9_7F4A_7C15)).collect();
        let mut recv = Vec::new();
        for (i, &k) in sent.iter().enumerate() {
            if i % 7 != 0 {
                recv.push(k);
                if i % 11 == 0 {
                    recv.push(k);
                }
            }
        }
        for c in recv.chunks_mut(5) {
            c.reverse();
        }
        let (s, r) = join_keys(&sent, &recv);
        // The plain definition: the k-th departure of a key is the k-th arrival of it.
        let mut arrivals: HashMap<u64, Vec<usize>> = HashMap::new();
        for (j, &k) in recv.iter().enumerate() {
            arrivals.entry(k).or_default().push(j);
        }
        let mut seen: HashMap<u64, usize> = HashMap::new();
        for (i, &k) in sent.iter().enumerate() {
            let n = seen.entry(k).or_default();
            let expect = arrivals.get(&k).and_then(|v| v.get(*n)).map_or(-1, |&j| j as i64);
            *n += 1;
            assert_eq!(s[i], expect, "departure {i}");
            if expect >= 0 {
                assert_eq!(r[expect as usize], i as i64);
            }
        }
        let matched = s.iter().filter(|&&x| x >= 0).count();
        assert_eq!(r.iter().filter(|&&x| x == DUPLICATE).count(), recv.len() - matched);
    }
}

/// The packet join key, the one definition (docs/metrics.md, "Packet join"): a hash of the packet's first bytes
/// after the IPv4 header (`key`: FNV-1a of docs/bottleneck-log.md; `join_key`: the same with the UDP/TCP checksum
/// zeroed) mixed with the IPv4 identification, which forwarding keeps and which tells apart otherwise identical
/// packets (two duplicate TCP ACKs). Departures and arrivals with the same key are matched in occurrence order.
#[inline]
pub fn mix_ip_id(key: u64, ip_id: u16) -> u64 {
    key ^ (ip_id as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// One direction's packets in each capture: rows where src and dst are the two data addresses, and their join keys
/// (payload hash mixed with ip.id), in one pass instead of several whole-array numpy passes.
pub fn direction_keys(src: &[u32], dst: &[u32], key: &[u64], ip_id: &[u16], a: u32, b: u32) -> (Vec<i64>, Vec<u64>) {
    let mut rows = Vec::new();
    let mut keys = Vec::new();
    for i in 0..src.len() {
        if src[i] == a && dst[i] == b {
            rows.push(i as i64);
            keys.push(mix_ip_id(key[i], ip_id[i]));
        }
    }
    (rows, keys)
}

/// The flow of each packet: numbers (direction, 5-tuple, class, and SSRC for RTP) by first appearance.
#[allow(clippy::too_many_arguments)]
pub fn flow_ids(
    direction: &[u8],
    src: &[u32],
    dst: &[u32],
    sport: &[u16],
    dport: &[u16],
    proto: &[u8],
    cls: &[u8],
    ssrc: &[u32],
    rtp_cls: u8,
) -> (Vec<u32>, Vec<i64>) {
    let keys: Vec<u64> = (0..src.len())
        .map(|i| {
            let mut h = (src[i] as u64).wrapping_mul(0x1000_0000_01B3);
            h ^= (dst[i] as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
            h ^= ((sport[i] as u64) << 48)
                | ((dport[i] as u64) << 32)
                | ((proto[i] as u64) << 24)
                | ((cls[i] as u64) << 16);
            if cls[i] == rtp_cls {
                h ^= (ssrc[i] as u64).wrapping_mul(0xC2B2_AE3D_27D4_EB4F);
            }
            h ^ ((direction[i] as u64) << 63)
        })
        .collect();
    group_ids(&keys)
}
