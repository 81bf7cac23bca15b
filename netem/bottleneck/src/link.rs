//! The emulated link, on any clock: outages, burst loss, random loss -> queue discipline -> transmission at the
//! link rate -> propagation delay (+ jitter, order kept) -> release. Pure logic: the caller feeds arrivals and the
//! current time, and collects what to drop now and what is due; the same code runs on the simulated clock of the tests
//! and on the real clock of the NFQUEUE loop.

use crate::config::LinkConfig;
use crate::flow_delay::FlowDelays;
use crate::loss::{GilbertElliott, Outages};
use crate::packet::{Event, Packet};
use crate::qdisc::{self, Dropped, Qdisc};
use crate::rate::RateLimiter;
use rand::rngs::SmallRng;
use rand::Rng;
use std::collections::VecDeque;

/// Packets of one lane of the delay line, in release order, and the release time of the last one.
#[derive(Default)]
struct Lane {
    in_flight: VecDeque<Packet>,
    last_due_ns: u64,
}

/// Running totals, as the stats file reports them.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct Counters {
    pub arrived: u64,
    pub enqueued: u64,
    pub forwarded: u64,
    pub dropped_tail: u64,
    pub dropped_aqm: u64,
    pub dropped_loss: u64,
    pub dropped_shutdown: u64,
    pub dropped_outage: u64,
    pub dropped_gemodel: u64,
    pub ecn_marked: u64,
}

/// A packet whose fate is decided: forwarded (due at `packet.due_ns`) or dropped now.
#[derive(Debug)]
pub struct Outcome {
    pub packet: Packet,
    pub event: Event,
}

pub struct Link {
    outages: Option<Outages>,
    gemodel: Option<GilbertElliott>,
    loss_probability: f64,
    delay_ns: u64,
    /// The delay schedule: (offset from the schedule's time 0, delay) per step, in order.
    delay_steps: Vec<(u64, u64)>,
    /// Time 0 of the delay schedule (as the rate's: `restart_schedule`).
    schedule_t0_ns: u64,
    jitter_ns: u64,
    qdisc: Box<dyn Qdisc>,
    rate: RateLimiter,
    /// End of the last transmission: the next dequeue happens then (or at the next arrival, if later).
    link_free_ns: u64,
    /// Latest time this link has been brought to; arrivals stamped earlier are handled as if now.
    clock_ns: u64,
    /// The discipline holds packets but would not give one (a rate-capped band in debt, nothing else to send):
    /// the next dequeue waits for its timer or the next arrival.
    blocked: bool,
    /// What the rate meters recorded, for the caller to take (`take_meter_records`).
    meter_records: Vec<crate::meter::MeterRecord>,
    /// The delay line: one lane for the link's own delay (lane 0) and one per flow with a delay of its own (lane
    /// 1 + its index in `flow_delays`), each in release order: a flow keeps its order, flows of different delays do
    /// not wait for each other.
    lanes: Vec<Lane>,
    /// Flows with a propagation delay of their own, instead of the link's (`set_flow_delays`).
    flow_delays: FlowDelays,
    /// The packet being transmitted: (end of transmission, bytes, band).
    in_service: Option<(u64, u32, u8)>,
    /// Drops decided but not yet taken by the caller.
    dropped: Vec<Outcome>,
    scratch: Vec<Dropped>,
    rng: SmallRng,
    pub counters: Counters,
}

impl Link {
    pub fn new(cfg: &LinkConfig, t0_ns: u64, now_ns: u64, mut rng: SmallRng) -> Link {
        let qdisc = cfg.qdisc.build(now_ns, &mut rng);
        // Seeded from the link's generator only when configured, so that a link without them draws as before.
        let outages = cfg.outage.as_ref().map(|o| Outages::new(o, now_ns, &mut rng));
        let gemodel = cfg.loss_gemodel.as_ref().map(|g| GilbertElliott::new(g, &mut rng));
        Link {
            outages,
            gemodel,
            loss_probability: cfg.loss_percent / 100.0,
            delay_ns: qdisc::ms_to_ns(cfg.delay_ms),
            delay_steps: cfg
                .delay_schedule
                .iter()
                .map(|s| (qdisc::ms_to_ns(s.at_s * 1000.0), qdisc::ms_to_ns(s.delay_ms)))
                .collect(),
            schedule_t0_ns: t0_ns,
            jitter_ns: qdisc::ms_to_ns(cfg.jitter_ms),
            qdisc,
            rate: RateLimiter::new(&cfg.rate, t0_ns),
            link_free_ns: 0,
            blocked: false,
            meter_records: Vec::new(),
            clock_ns: now_ns,
            lanes: vec![Lane::default()],
            flow_delays: FlowDelays::default(),
            in_service: None,
            dropped: Vec::new(),
            scratch: Vec::new(),
            rng,
            counters: Counters::default(),
        }
    }

    fn in_service_at(&self, now_ns: u64) -> Option<u32> {
        self.in_service.filter(|s| s.0 > now_ns).map(|s| s.1)
    }

    /// Packets queued, counting the one in transmission (as Linux's qdisc statistics do).
    pub fn queue_packets(&self) -> usize {
        self.qdisc.len_packets() + self.in_service_at(self.clock_ns).map_or(0, |_| 1)
    }

    pub fn queue_bytes(&self) -> u64 {
        self.qdisc.len_bytes() + self.in_service_at(self.clock_ns).map_or(0, |b| b as u64)
    }

    #[allow(dead_code)]
    pub fn in_flight_packets(&self) -> usize {
        self.lanes.iter().map(|l| l.in_flight.len()).sum()
    }

    /// Replaces the flows with a delay of their own. Packets already on the delay line keep their release time; a
    /// flow keeps its lane (its index) so that its order is kept across a table that grows.
    pub fn set_flow_delays(&mut self, table: FlowDelays) {
        if self.lanes.len() < table.flows.len() + 1 {
            self.lanes.resize_with(table.flows.len() + 1, Lane::default);
        }
        self.flow_delays = table;
    }

    /// DualPI2's coupled probabilities and queue lengths (None for every other discipline).
    pub fn coupled_state(&self) -> Option<crate::qdisc::dualpi2::CoupledState> {
        self.qdisc.coupled_state()
    }

    /// Time 0 of the rate schedule or trace, and of the delay schedule, becomes `t0_ns`.
    pub fn restart_schedule(&mut self, t0_ns: u64) {
        self.rate.restart_schedule(t0_ns);
        self.schedule_t0_ns = t0_ns;
    }

    /// The propagation delay of a packet that reached the bottleneck at `arrival_ns` (the netem backends apply
    /// theirs on arrival too, before the queue).
    fn delay_ns_at(&self, arrival_ns: u64) -> u64 {
        let since = arrival_ns.saturating_sub(self.schedule_t0_ns);
        let started = arrival_ns >= self.schedule_t0_ns;
        self.delay_steps.iter().take_while(|(at, _)| started && *at <= since).last().map_or(self.delay_ns, |s| s.1)
    }

    pub fn rate_kbit_at(&self, t_ns: u64) -> Option<f64> {
        self.rate.kbit_at(t_ns)
    }

    /// A packet reaches the bottleneck at `packet.arrival_ns`.
    pub fn arrive(&mut self, mut packet: Packet) {
        let now_ns = packet.arrival_ns.max(self.clock_ns);
        self.advance(now_ns);
        self.counters.arrived += 1;
        // The packet still in transmission counts as queued (as in Linux's TBF + child qdisc).
        let (svc_packets, svc_bytes, svc_band) = match self.in_service {
            Some((tx_end, bytes, band)) if tx_end > now_ns => (1usize, bytes as u64, band),
            _ => (0, 0, 0),
        };
        self.qdisc.set_in_service(svc_packets, svc_bytes, svc_band);
        packet.queue_packets_at_arrival = (self.qdisc.len_packets() + svc_packets) as u32;
        packet.queue_bytes_at_arrival = (self.qdisc.len_bytes() + svc_bytes).min(u32::MAX as u64) as u32;
        if self.outages.as_mut().is_some_and(|o| o.off_at(now_ns)) {
            self.finish_drop(packet, Event::DroppedOutage);
            return;
        }
        if self.gemodel.as_mut().is_some_and(|g| g.lose()) {
            self.finish_drop(packet, Event::DroppedGeModel);
            return;
        }
        if self.loss_probability > 0.0 && self.rng.gen::<f64>() < self.loss_probability {
            self.finish_drop(packet, Event::DroppedLoss);
            return;
        }
        if (self.qdisc.len_packets() == 0 || self.blocked) && self.link_free_ns < now_ns {
            // The link was idle: this packet can be dequeued the moment it arrives.
            self.link_free_ns = now_ns;
        }
        self.blocked = false;
        let id = packet.id;
        self.qdisc.enqueue(packet, now_ns, &mut self.scratch);
        if !self.scratch.iter().any(|d| d.packet.id == id) {
            self.counters.enqueued += 1;
        }
        self.take_scratch_drops();
        self.qdisc.take_meter_records(&mut self.meter_records);
        self.advance(now_ns);
    }

    /// What the rate meters recorded so far (in the order it happened per meter).
    pub fn take_meter_records(&mut self) -> std::vec::Drain<'_, crate::meter::MeterRecord> {
        self.meter_records.drain(..)
    }

    /// Runs the link up to `now_ns`: discipline timers and dequeues at the times they fall due.
    pub fn advance(&mut self, now_ns: u64) {
        self.clock_ns = self.clock_ns.max(now_ns);
        loop {
            let dequeue_at = (self.qdisc.len_packets() > 0 && !self.blocked).then_some(self.link_free_ns);
            let timer_at = self.qdisc.next_timer_ns();
            let next = match (dequeue_at, timer_at) {
                (Some(d), Some(t)) => d.min(t),
                (Some(d), None) => d,
                (None, Some(t)) => t,
                (None, None) => break,
            };
            if next > now_ns {
                break;
            }
            if timer_at == Some(next) {
                self.qdisc.on_timer(next);
                self.qdisc.take_meter_records(&mut self.meter_records);
                if self.blocked {
                    self.blocked = false;
                    self.link_free_ns = self.link_free_ns.max(next);
                }
                continue;
            }
            let t = next;
            let got = self.qdisc.dequeue(t, &mut self.scratch);
            for d in self.scratch.iter_mut() {
                d.packet.dequeue_ns = t;
            }
            self.take_scratch_drops();
            self.blocked = got.is_none() && self.qdisc.len_packets() > 0;
            if let Some(mut p) = got {
                p.dequeue_ns = t;
                p.tx_end_ns = self.rate.transmit(t, p.wire_bytes);
                self.link_free_ns = p.tx_end_ns;
                self.in_service = Some((p.tx_end_ns, p.wire_bytes, p.band));
                let jitter = if self.jitter_ns > 0 { self.rng.gen_range(0..=self.jitter_ns) } else { 0 };
                let flow = self.flow_delays.flow_of(&p);
                let delay = flow.map_or_else(|| self.delay_ns_at(p.arrival_ns), |i| self.flow_delays.flows[i].delay_ns);
                let lane = &mut self.lanes[flow.map_or(0, |i| i + 1)];
                // Neither jitter nor a lower delay reorders: a packet is not released before the one ahead of it in
                // its lane.
                p.due_ns = (p.tx_end_ns + delay + jitter).max(lane.last_due_ns);
                lane.last_due_ns = p.due_ns;
                lane.in_flight.push_back(p);
            }
        }
    }

    fn take_scratch_drops(&mut self) {
        let drops: Vec<Dropped> = self.scratch.drain(..).collect();
        for d in drops {
            self.finish_drop(d.packet, d.event);
        }
    }

    fn finish_drop(&mut self, packet: Packet, event: Event) {
        match event {
            Event::DroppedTail => self.counters.dropped_tail += 1,
            Event::DroppedAqm => self.counters.dropped_aqm += 1,
            Event::DroppedLoss => self.counters.dropped_loss += 1,
            Event::DroppedShutdown => self.counters.dropped_shutdown += 1,
            Event::DroppedOutage => self.counters.dropped_outage += 1,
            Event::DroppedGeModel => self.counters.dropped_gemodel += 1,
            Event::Forwarded | Event::ForwardedCe => unreachable!("not a drop"),
        }
        self.dropped.push(Outcome { packet, event });
    }

    /// Drops decided so far (give their verdicts now).
    pub fn take_drops(&mut self) -> std::vec::Drain<'_, Outcome> {
        self.dropped.drain(..)
    }

    /// When something next happens: a release, a dequeue or a discipline timer.
    pub fn next_event_ns(&self) -> Option<u64> {
        let release = self.next_release().map(|(_, due)| due);
        let dequeue = (self.qdisc.len_packets() > 0 && !self.blocked).then_some(self.link_free_ns);
        [release, dequeue, self.qdisc.next_timer_ns()].into_iter().flatten().min()
    }

    /// The lane whose first packet is released first, and that packet's release time.
    fn next_release(&self) -> Option<(usize, u64)> {
        self.lanes
            .iter()
            .enumerate()
            .filter_map(|(i, l)| l.in_flight.front().map(|p| (i, p.due_ns)))
            .min_by_key(|x| x.1)
    }

    /// Pops the next forwarded packet if it is due at `now_ns`.
    pub fn pop_due(&mut self, now_ns: u64) -> Option<Outcome> {
        let (lane, due_ns) = self.next_release()?;
        if due_ns > now_ns {
            return None;
        }
        let p = self.lanes[lane].in_flight.pop_front().unwrap();
        self.counters.forwarded += 1;
        let event = if p.ce_marked {
            self.counters.ecn_marked += 1;
            Event::ForwardedCe
        } else {
            Event::Forwarded
        };
        Some(Outcome { packet: p, event })
    }

    /// Shutdown: packets due by `now_ns` are forwarded, everything else held is dropped (event 5).
    pub fn shutdown(&mut self, now_ns: u64) -> Vec<Outcome> {
        let mut out = Vec::new();
        while let Some(o) = self.pop_due(now_ns) {
            out.push(o);
        }
        out.extend(self.take_drops());
        self.in_service = None;
        let held: Vec<Packet> = self.lanes.iter_mut().flat_map(|l| l.in_flight.drain(..)).collect();
        let rest: Vec<Packet> = held.into_iter().chain(self.qdisc.drain()).collect();
        for p in rest {
            self.finish_drop(p, Event::DroppedShutdown);
        }
        out.extend(self.take_drops());
        out
    }
}
