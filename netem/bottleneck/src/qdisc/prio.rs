//! Strict priority with DSCP classification (the structure of Linux net/sched/sch_prio.c, classifying by the
//! DSCP lists of the scenario instead of the TOS priomap): a packet goes to the first band whose list holds its
//! DSCP, else to the last band; band n is served only while bands 0..n are empty. Each band runs its own child
//! discipline.

use super::{Dropped, Qdisc};
use crate::packet::Packet;

pub struct Prio {
    bands: Vec<(Vec<u8>, Box<dyn Qdisc>)>,
}

impl Prio {
    pub fn new(bands: Vec<(Vec<u8>, Box<dyn Qdisc>)>) -> Prio {
        Prio { bands }
    }

    fn classify(&self, dscp: u8) -> usize {
        self.bands.iter().position(|(list, _)| list.contains(&dscp)).unwrap_or(self.bands.len() - 1)
    }
}

impl Qdisc for Prio {
    fn enqueue(&mut self, mut packet: Packet, now_ns: u64, drops: &mut Vec<Dropped>) {
        let band = self.classify(packet.dscp);
        packet.band = band as u8;
        let n = drops.len();
        self.bands[band].1.enqueue(packet, now_ns, drops);
        // The log's band field names the prio band, also for what a child dropped.
        drops[n..].iter_mut().for_each(|d| d.packet.band = band as u8);
    }

    fn dequeue(&mut self, now_ns: u64, drops: &mut Vec<Dropped>) -> Option<Packet> {
        for (band, (_, q)) in self.bands.iter_mut().enumerate() {
            let n = drops.len();
            let got = q.dequeue(now_ns, drops);
            drops[n..].iter_mut().for_each(|d| d.packet.band = band as u8);
            if let Some(mut p) = got {
                p.band = band as u8;
                return Some(p);
            }
        }
        None
    }

    fn len_packets(&self) -> usize {
        self.bands.iter().map(|(_, q)| q.len_packets()).sum()
    }

    fn len_bytes(&self) -> u64 {
        self.bands.iter().map(|(_, q)| q.len_bytes()).sum()
    }

    fn next_timer_ns(&self) -> Option<u64> {
        self.bands.iter().filter_map(|(_, q)| q.next_timer_ns()).min()
    }

    fn on_timer(&mut self, now_ns: u64) {
        for (_, q) in &mut self.bands {
            if q.next_timer_ns().is_some_and(|t| t <= now_ns) {
                q.on_timer(now_ns);
            }
        }
    }

    fn set_in_service(&mut self, packets: usize, bytes: u64, band: u8) {
        for (i, (_, q)) in self.bands.iter_mut().enumerate() {
            if i == band as usize { q.set_in_service(packets, bytes, band) } else { q.set_in_service(0, 0, 0) }
        }
    }

    fn drain(&mut self) -> Vec<Packet> {
        self.bands.iter_mut().flat_map(|(_, q)| q.drain()).collect()
    }
}
