//! Strict priority with DSCP classification (the structure of Linux net/sched/sch_prio.c, classifying by the
//! DSCP lists of the scenario instead of the TOS priomap): a packet goes to the first band whose list holds its
//! DSCP, else to the last band; band n is served only while bands 0..n are empty (or rate-capped and in debt).
//! Each band runs its own child discipline. The prio also carries the scenario's rate meters (meter.rs): they see
//! each packet on arrival and may mark it CE or move it to another band; and a band may have a rate cap (a token
//! bucket, as the thesis' HTB baseline).

use super::{Dropped, Qdisc};
use crate::meter::{Meter, MeterRecord, RateCap};
use crate::packet::Packet;

pub struct Band {
    pub dscp: Vec<u8>,
    pub qdisc: Box<dyn Qdisc>,
    pub cap: Option<RateCap>,
}

pub struct Prio {
    bands: Vec<Band>,
    meters: Vec<Meter>,
    records: Vec<MeterRecord>,
}

impl Prio {
    pub fn new(bands: Vec<Band>, meters: Vec<Meter>) -> Prio {
        Prio { bands, meters, records: Vec::new() }
    }

    fn classify(&self, dscp: u8) -> usize {
        self.bands.iter().position(|b| b.dscp.contains(&dscp)).unwrap_or(self.bands.len() - 1)
    }

    fn close_meter_windows(&mut self, now_ns: u64) {
        for m in &mut self.meters {
            m.close_windows(now_ns, &mut self.records);
        }
    }
}

impl Qdisc for Prio {
    fn enqueue(&mut self, mut packet: Packet, now_ns: u64, drops: &mut Vec<Dropped>) {
        self.close_meter_windows(now_ns);
        let mut band = self.classify(packet.dscp);
        for m in &mut self.meters {
            if let Some(to) = m.observe(&mut packet, now_ns) {
                band = to;
            }
        }
        packet.band = band as u8;
        let n = drops.len();
        self.bands[band].qdisc.enqueue(packet, now_ns, drops);
        // The log's band field names the prio band, also for what a child dropped.
        drops[n..].iter_mut().for_each(|d| d.packet.band = band as u8);
    }

    fn dequeue(&mut self, now_ns: u64, drops: &mut Vec<Dropped>) -> Option<Packet> {
        for (i, b) in self.bands.iter_mut().enumerate() {
            if let Some(cap) = b.cap.as_mut() {
                if !cap.may_send(now_ns) {
                    continue;
                }
            }
            let n = drops.len();
            let got = b.qdisc.dequeue(now_ns, drops);
            drops[n..].iter_mut().for_each(|d| d.packet.band = i as u8);
            if let Some(mut p) = got {
                if let Some(cap) = b.cap.as_mut() {
                    cap.charge(p.wire_bytes);
                }
                p.band = i as u8;
                return Some(p);
            }
        }
        None
    }

    fn len_packets(&self) -> usize {
        self.bands.iter().map(|b| b.qdisc.len_packets()).sum()
    }

    fn len_bytes(&self) -> u64 {
        self.bands.iter().map(|b| b.qdisc.len_bytes()).sum()
    }

    /// The children's timers, the meters' window ends, and when a capped band with packets leaves its debt.
    fn next_timer_ns(&self) -> Option<u64> {
        let children = self.bands.iter().filter_map(|b| b.qdisc.next_timer_ns());
        let caps = self
            .bands
            .iter()
            .filter(|b| b.qdisc.len_packets() > 0)
            .filter_map(|b| b.cap.as_ref().and_then(|c| c.ready_at_ns()));
        let meters = self.meters.iter().map(|m| m.next_window_end_ns());
        children.chain(caps).chain(meters).min()
    }

    fn on_timer(&mut self, now_ns: u64) {
        for b in &mut self.bands {
            if b.qdisc.next_timer_ns().is_some_and(|t| t <= now_ns) {
                b.qdisc.on_timer(now_ns);
            }
            if let Some(cap) = b.cap.as_mut() {
                cap.may_send(now_ns);
            }
        }
        self.close_meter_windows(now_ns);
    }

    fn set_in_service(&mut self, packets: usize, bytes: u64, band: u8) {
        for (i, b) in self.bands.iter_mut().enumerate() {
            if i == band as usize {
                b.qdisc.set_in_service(packets, bytes, band)
            } else {
                b.qdisc.set_in_service(0, 0, 0)
            }
        }
    }

    fn take_meter_records(&mut self, out: &mut Vec<MeterRecord>) {
        out.append(&mut self.records);
    }

    fn drain(&mut self) -> Vec<Packet> {
        self.bands.iter_mut().flat_map(|b| b.qdisc.drain()).collect()
    }
}
