//! Strict priority with DSCP classification (the structure of Linux net/sched/sch_prio.c, classifying by the
//! DSCP lists of the scenario instead of the TOS priomap): a packet goes to the first band whose list holds its
//! DSCP, else to the last band; band n is served only while bands 0..n are empty (or rate-capped and in debt).
//! Each band runs its own child discipline. The prio also carries the scenario's rate meters (meter.rs): they see
//! each packet on arrival and may mark it CE or move it to another band; and a band may have a rate cap (a token
//! bucket, as the thesis' HTB baseline).

use super::codel::CodelConfig;
use super::fifo::FifoConfig;
use super::fq_codel::FqCodelConfig;
use super::pie::PieConfig;
use super::sfq::SfqConfig;
use super::{band_kinds, Dropped, Qdisc, QdiscParams};
use crate::check::{check_dscp, field, nullable, optional, ConfigError};
use crate::meter::{Meter, MeterConfig, MeterRecord, RateCap, RateCapConfig};
use crate::packet::Packet;
use rand::rngs::SmallRng;
use serde::{Deserialize, Serialize};

/// prio's parameters: 2 to 16 bands, and the rate meters (meter.rs).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PrioConfig {
    pub bands: Vec<PrioBand>,
    pub meters: Vec<MeterConfig>,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PrioBand {
    /// Absent on the last band, which takes every DSCP the others do not list.
    #[serde(default, deserialize_with = "optional", skip_serializing_if = "Option::is_none")]
    pub dscp: Option<Vec<u8>>,
    pub qdisc: BandQdiscConfig,
    /// A token bucket on the band (the thesis' HTB baseline): null for no cap.
    #[serde(deserialize_with = "nullable")]
    pub rate_cap: Option<RateCapConfig>,
}

/// A band's discipline: any kind but prio and dualpi2 (refused as the link is read: `not_a_band_kind`).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum BandQdiscConfig {
    Fifo(FifoConfig),
    Codel(CodelConfig),
    Pie(PieConfig),
    Sfq(SfqConfig),
    FqCodel(FqCodelConfig),
}

impl BandQdiscConfig {
    fn params(&self) -> &dyn QdiscParams {
        match self {
            BandQdiscConfig::Fifo(p) => p,
            BandQdiscConfig::Codel(p) => p,
            BandQdiscConfig::Pie(p) => p,
            BandQdiscConfig::Sfq(p) => p,
            BandQdiscConfig::FqCodel(p) => p,
        }
    }
}

impl PrioBand {
    fn dscp(&self) -> &[u8] {
        self.dscp.as_deref().unwrap_or_default()
    }
}

impl QdiscParams for PrioConfig {
    fn validate(&self, path: &str) -> Result<(), ConfigError> {
        let bands = field(path, "bands");
        if !(2..=16).contains(&self.bands.len()) {
            return Err(ConfigError::new(&bands, format!("must have 2 to 16 bands (got {})", self.bands.len())));
        }
        for (i, band) in self.bands.iter().enumerate() {
            let at = format!("{bands}[{i}]");
            let dscp_field = field(&at, "dscp");
            let last = i + 1 == self.bands.len();
            match &band.dscp {
                None if !last => return Err(ConfigError::new(&dscp_field, "is required on every band but the last")),
                Some(_) if last => {
                    return Err(ConfigError::new(
                        &dscp_field,
                        "must be absent on the last band (it takes every other DSCP)",
                    ))
                }
                Some(dscp) => {
                    check_dscp(&dscp_field, dscp)?;
                    // A DSCP in two bands would only ever reach the first: netem refuses it, so must we.
                    if let Some(d) = dscp.iter().find(|d| self.bands[..i].iter().any(|b| b.dscp().contains(*d))) {
                        return Err(ConfigError::new(
                            &dscp_field,
                            format!("holds {d}, which an earlier band already lists"),
                        ));
                    }
                }
                None => {}
            }
            band.qdisc.params().validate(&field(&at, "qdisc"))?;
            if let Some(cap) = &band.rate_cap {
                cap.validate(&field(&at, "rate_cap"))?;
            }
        }
        let meters = field(path, "meters");
        if self.meters.len() > 255 {
            return Err(ConfigError::new(&meters, format!("must have at most 255 meters (got {})", self.meters.len())));
        }
        for (i, meter) in self.meters.iter().enumerate() {
            meter.validate(&format!("{meters}[{i}]"), self.bands.len())?;
        }
        Ok(())
    }

    fn max_packets(&self) -> u64 {
        self.bands.iter().map(|b| b.qdisc.params().max_packets()).sum()
    }

    fn build(&self, now_ns: u64, rng: &mut SmallRng) -> Box<dyn Qdisc> {
        let bands = self
            .bands
            .iter()
            .map(|b| Band {
                dscp: b.dscp().to_vec(),
                qdisc: b.qdisc.params().build(now_ns, rng),
                cap: b.rate_cap.map(|c| RateCap::new(c.bits_per_s(), c.burst_bytes, now_ns)),
            })
            .collect();
        let meters = self.meters.iter().enumerate().map(|(i, m)| Meter::new(i as u8, m, now_ns)).collect();
        Box::new(Prio::new(bands, meters))
    }
}

/// The error for a kind a band may not be (prio, dualpi2) at `band_qdisc` (`qdisc.bands[i].qdisc`).
pub fn not_a_band_kind(band_qdisc: &str, kind: &str) -> ConfigError {
    let allowed: Vec<&str> = band_kinds().collect();
    ConfigError::new(
        &field(band_qdisc, "kind"),
        format!("cannot be {kind} inside a prio band (allowed: {})", allowed.join(", ")),
    )
}

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
