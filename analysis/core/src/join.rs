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
pub fn join_keys(sent: &[u64], recv: &[u64]) -> (Vec<i64>, Vec<i64>) {
    // Arrivals of each key as a linked list in arrival order: (head, tail, departures seen) in the map, links in
    // `next`.
    let mut lists: HashMap<u64, (u32, u32, u32), BuildHasherDefault<KeyHasher>> =
        HashMap::with_capacity_and_hasher(recv.len(), Default::default());
    let mut next = vec![NONE; recv.len()];
    for (j, &k) in recv.iter().enumerate() {
        let j = j as u32;
        lists
            .entry(k)
            .and_modify(|e| {
                if e.1 != NONE {
                    next[e.1 as usize] = j;
                }
                e.1 = j;
            })
            .or_insert((j, j, 0));
    }
    let mut sent_match = vec![-1i64; sent.len()];
    let mut recv_match = vec![UNMATCHED; recv.len()];
    for (i, &k) in sent.iter().enumerate() {
        if let Some(e) = lists.get_mut(&k) {
            e.2 += 1;
            if e.0 != NONE {
                let j = e.0;
                sent_match[i] = j as i64;
                recv_match[j as usize] = i as i64;
                e.0 = next[j as usize];
            }
        }
    }
    for (j, &k) in recv.iter().enumerate() {
        if recv_match[j] == UNMATCHED && lists.get(&k).is_some_and(|e| e.2 > 0) {
            recv_match[j] = DUPLICATE;
        }
    }
    (sent_match, recv_match)
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
