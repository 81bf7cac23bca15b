//! Rate meters and their actions (network-assisted rate control, after Arreaza Govea's thesis, docs/bottleneck.md
//! "Meters"): a meter watches the packets of some DSCPs arriving at a prio discipline, per flow (5-tuple) or for
//! the whole class, and measures their rate over consecutive windows of `window_ms` (arrival bytes, link-layer
//! bytes as the link counts them). At the end of each window it compares the rate with its limit and acts:
//! - demote: when the rate exceeds the limit, the flow's packets go to band `to_band` for `hold_ms`;
//! - ce_all: when the rate exceeds the limit, every ECN-capable packet of the flow is marked CE for `hold_ms`;
//! - ce_fraction: a fraction p of its ECN-capable packets is marked CE, p updated every window by the controller
//!   p <- clamp(p + gain * (rate - limit) / limit, 0, 1); marks are spread evenly (a credit accumulator: each
//!   ECN-capable packet adds p, a packet is marked when the credit reaches 1), so the marks are deterministic.
//!
//! A hold is not extended while it runs: the rate of the window in which it ends decides whether a new one starts.
//! Every start, end and window is recorded (`MeterRecord`, written as JSON lines by actions.rs).

use crate::check::{check_dscp, check_integer, check_number, field, kbit_to_bits, whole_bits, ConfigError};
use crate::packet::Packet;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// A rate meter of a prio discipline, as the link gives it.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct MeterConfig {
    pub dscp: Vec<u8>,
    pub per: MeterPer,
    pub window_ms: f64,
    pub limit_kbit: f64,
    pub action: MeterActionConfig,
}

/// One meter per 5-tuple flow, or one for all packets of the meter's DSCPs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MeterPer {
    Flow,
    Class,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum MeterActionConfig {
    Demote(DemoteAction),
    CeAll(CeAllAction),
    CeFraction(CeFractionAction),
}

#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DemoteAction {
    pub to_band: usize,
    pub hold_ms: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CeAllAction {
    pub hold_ms: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CeFractionAction {
    pub gain: f64,
    pub initial_fraction: f64,
}

impl MeterConfig {
    /// The schema's ranges (`path`: the meter's, e.g. `qdisc.meters[0]`); a demote goes to one of the `n_bands`.
    pub fn validate(&self, path: &str, n_bands: usize) -> Result<(), ConfigError> {
        check_dscp(&field(path, "dscp"), &self.dscp)?;
        check_number(path, "window_ms", self.window_ms, 0.0, 1e6, true)?;
        check_number(path, "limit_kbit", self.limit_kbit, 0.0, 10_000_000.0, true)?;
        let action = field(path, "action");
        match &self.action {
            MeterActionConfig::Demote(a) => {
                check_integer(&action, "to_band", a.to_band as u64, 0, 15)?;
                if a.to_band >= n_bands {
                    let problem = format!("is {}, but the prio has bands 0 to {}", a.to_band, n_bands - 1);
                    return Err(ConfigError::new(&field(&action, "to_band"), problem));
                }
                check_number(&action, "hold_ms", a.hold_ms, 0.0, 1e7, true)
            }
            MeterActionConfig::CeAll(a) => check_number(&action, "hold_ms", a.hold_ms, 0.0, 1e7, true),
            MeterActionConfig::CeFraction(a) => {
                check_number(&action, "gain", a.gain, 0.0, 1e6, true)?;
                check_number(&action, "initial_fraction", a.initial_fraction, 0.0, 1.0, false)
            }
        }
    }
}

/// A band's rate cap, as the link gives it.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RateCapConfig {
    #[serde(serialize_with = "whole_bits")]
    pub kbit: f64,
    pub burst_bytes: u64,
}

impl RateCapConfig {
    pub fn validate(&self, path: &str) -> Result<(), ConfigError> {
        kbit_to_bits(path, "kbit", self.kbit)?;
        check_integer(path, "burst_bytes", self.burst_bytes, 1514, u32::MAX.into())
    }

    pub fn bits_per_s(&self) -> u64 {
        (self.kbit * 1000.0).round() as u64
    }
}

/// A flow's addresses, protocol and ports, for the action log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FlowKey {
    pub src: [u8; 4],
    pub dst: [u8; 4],
    pub proto: u8,
    pub sport: u16,
    pub dport: u16,
}

impl FlowKey {
    pub fn of(p: &Packet) -> FlowKey {
        let d = &p.data;
        let ihl = ((d[0] & 0x0f) as usize) * 4;
        let has_ports = matches!(p.ip_proto, 6 | 17 | 132 | 136) && d.len() >= ihl + 4;
        let port = |o: usize| if has_ports { u16::from_be_bytes([d[ihl + o], d[ihl + o + 1]]) } else { 0 };
        FlowKey {
            src: [d[12], d[13], d[14], d[15]],
            dst: [d[16], d[17], d[18], d[19]],
            proto: p.ip_proto,
            sport: port(0),
            dport: port(2),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordKind {
    /// The end of a metering window: the rate measured and what the meter did during the window.
    Window,
    /// A demote or ce_all hold begins (at a window end) ...
    Start,
    /// ... and ends (at `hold_ms` after its start).
    End,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MeterRecord {
    pub t_ns: u64,
    /// The meter's index in the prio's `meters` list.
    pub meter: u8,
    pub action: ActionKind,
    /// None for a meter of the whole class.
    pub flow: Option<FlowKey>,
    pub kind: RecordKind,
    /// Window records: the rate measured over the window that ends at `t_ns`.
    pub rate_bps: u64,
    pub limit_bps: u64,
    /// ce_fraction: the fraction in force for the next window (after this window's update); ce_all: 1 while a
    /// hold runs, else 0; demote: 0.
    pub fraction: f64,
    /// Packets of the window this meter marked CE, and (demote) moved to `to_band`.
    pub ce_marked: u32,
    pub demoted: u32,
    /// Start records: when the hold ends.
    pub until_ns: u64,
}

impl Default for MeterRecord {
    fn default() -> Self {
        MeterRecord {
            t_ns: 0,
            meter: 0,
            action: ActionKind::CeAll,
            flow: None,
            kind: RecordKind::Window,
            rate_bps: 0,
            limit_bps: 0,
            fraction: 0.0,
            ce_marked: 0,
            demoted: 0,
            until_ns: 0,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ActionKind {
    Demote,
    CeAll,
    CeFraction,
}

impl ActionKind {
    pub fn name(self) -> &'static str {
        match self {
            ActionKind::Demote => "demote",
            ActionKind::CeAll => "ce_all",
            ActionKind::CeFraction => "ce_fraction",
        }
    }
}

/// What one metered flow (or the class) is subject to now.
#[derive(Debug, Default)]
struct FlowState {
    flow: Option<FlowKey>,
    window_bytes: u64,
    /// A demote or ce_all hold: until when.
    hold_until_ns: Option<u64>,
    fraction: f64,
    credit: f64,
    ce_marked: u32,
    demoted: u32,
    /// Consecutive windows with nothing to report: the state is forgotten after `FORGET_AFTER_WINDOWS`.
    idle_windows: u32,
}

/// A per-flow meter forgets a flow after this many quiet windows (bounded memory with many short flows).
const FORGET_AFTER_WINDOWS: u32 = 10;

pub struct Meter {
    index: u8,
    dscp: Vec<u8>,
    per_flow: bool,
    window_ns: u64,
    limit_bps: u64,
    action: MeterActionConfig,
    next_end_ns: u64,
    flows: HashMap<u64, FlowState>,
}

impl Meter {
    /// Windows start at `now_ns` (when the link starts).
    pub fn new(index: u8, cfg: &MeterConfig, now_ns: u64) -> Meter {
        let window_ns = ((cfg.window_ms * 1e6).round() as u64).max(1);
        Meter {
            index,
            dscp: cfg.dscp.clone(),
            per_flow: cfg.per == MeterPer::Flow,
            window_ns,
            limit_bps: (cfg.limit_kbit * 1000.0).round() as u64,
            action: cfg.action.clone(),
            next_end_ns: now_ns + window_ns,
            flows: HashMap::new(),
        }
    }

    fn action_kind(&self) -> ActionKind {
        match self.action {
            MeterActionConfig::Demote(_) => ActionKind::Demote,
            MeterActionConfig::CeAll(_) => ActionKind::CeAll,
            MeterActionConfig::CeFraction(_) => ActionKind::CeFraction,
        }
    }

    pub fn next_window_end_ns(&self) -> u64 {
        self.next_end_ns
    }

    /// A packet of a DSCP this meter watches arrives (after `close_windows(now_ns)`): counts it, and applies the
    /// action in force (marks it CE, or returns the band it is demoted to).
    pub fn observe(&mut self, packet: &mut Packet, now_ns: u64) -> Option<usize> {
        if !self.dscp.contains(&packet.dscp) {
            return None;
        }
        let key = if self.per_flow { packet.flow_hash } else { 0 };
        let per_flow = self.per_flow;
        let initial = match self.action {
            MeterActionConfig::CeFraction(a) => a.initial_fraction,
            _ => 0.0,
        };
        let st = self.flows.entry(key).or_insert_with(|| FlowState {
            flow: per_flow.then(|| FlowKey::of(packet)),
            fraction: initial,
            ..FlowState::default()
        });
        st.window_bytes += packet.wire_bytes as u64;
        let holding = st.hold_until_ns.is_some_and(|t| now_ns < t);
        match self.action {
            MeterActionConfig::Demote(DemoteAction { to_band, .. }) if holding => {
                st.demoted += 1;
                return Some(to_band);
            }
            MeterActionConfig::CeAll(_) if holding && packet.is_ect() => {
                packet.set_ce();
                st.ce_marked += 1;
            }
            MeterActionConfig::CeFraction(_) if packet.is_ect() && st.fraction > 0.0 => {
                st.credit += st.fraction;
                if st.credit >= 1.0 - 1e-9 {
                    st.credit -= 1.0;
                    packet.set_ce();
                    st.ce_marked += 1;
                }
            }
            _ => {}
        }
        None
    }

    /// Ends every window that ends at or before `now_ns`, in order: measures, updates holds and fractions, and
    /// records what happened into `out`.
    pub fn close_windows(&mut self, now_ns: u64, out: &mut Vec<MeterRecord>) {
        while self.next_end_ns <= now_ns {
            let end = self.next_end_ns;
            self.close_window(end, out);
            self.next_end_ns += self.window_ns;
        }
    }

    fn close_window(&mut self, end_ns: u64, out: &mut Vec<MeterRecord>) {
        let (window_ns, limit_bps, index, action_kind) =
            (self.window_ns, self.limit_bps, self.index, self.action_kind());
        let action = self.action.clone();
        let base = MeterRecord { meter: index, action: action_kind, limit_bps, ..MeterRecord::default() };
        self.flows.retain(|_, st| {
            let rate_bps = (st.window_bytes as u128 * 8 * 1_000_000_000 / window_ns as u128) as u64;
            let mut was_active = false;
            // A hold that ended inside this window.
            if let Some(until) = st.hold_until_ns {
                was_active = true;
                if until <= end_ns {
                    st.hold_until_ns = None;
                    out.push(MeterRecord { t_ns: until, flow: st.flow, kind: RecordKind::End, ..base });
                }
            }
            match action {
                MeterActionConfig::Demote(DemoteAction { hold_ms, .. })
                | MeterActionConfig::CeAll(CeAllAction { hold_ms }) => {
                    if st.hold_until_ns.is_none() && rate_bps > limit_bps {
                        let until = end_ns + ((hold_ms * 1e6).round() as u64).max(1);
                        st.hold_until_ns = Some(until);
                        out.push(MeterRecord {
                            t_ns: end_ns,
                            flow: st.flow,
                            kind: RecordKind::Start,
                            rate_bps,
                            until_ns: until,
                            ..base
                        });
                    }
                    st.fraction = if matches!(action, MeterActionConfig::CeAll(_)) && st.hold_until_ns.is_some() {
                        1.0
                    } else {
                        0.0
                    };
                }
                MeterActionConfig::CeFraction(CeFractionAction { gain, .. }) => {
                    was_active |= st.fraction > 0.0;
                    let excess = (rate_bps as f64 - limit_bps as f64) / limit_bps as f64;
                    st.fraction = (st.fraction + gain * excess).clamp(0.0, 1.0);
                }
            }
            let report = st.window_bytes > 0 || was_active || st.hold_until_ns.is_some() || st.fraction > 0.0;
            if report {
                out.push(MeterRecord {
                    t_ns: end_ns,
                    flow: st.flow,
                    kind: RecordKind::Window,
                    rate_bps,
                    fraction: st.fraction,
                    ce_marked: st.ce_marked,
                    demoted: st.demoted,
                    ..base
                });
                st.idle_windows = 0;
            } else {
                st.idle_windows += 1;
            }
            st.window_bytes = 0;
            st.ce_marked = 0;
            st.demoted = 0;
            st.flow.is_none() || st.idle_windows < FORGET_AFTER_WINDOWS
        });
    }
}

/// A band's rate cap (the thesis' HTB baseline): a token bucket of `burst_bytes` filled at the cap's rate. As in
/// HTB, a band may send while its tokens are not negative and is charged after sending, so it may go one packet
/// into debt; while in debt it is skipped and lower bands are served. Tokens are kept in bit-nanoseconds (bits
/// times 1e9), so the arithmetic is exact.
#[derive(Debug, Clone)]
pub struct RateCap {
    bits_per_s: u64,
    depth: i128,
    tokens: i128,
    last_ns: u64,
}

const NS_PER_S: i128 = 1_000_000_000;

impl RateCap {
    pub fn new(bits_per_s: u64, burst_bytes: u64, now_ns: u64) -> RateCap {
        let depth = burst_bytes as i128 * 8 * NS_PER_S;
        RateCap { bits_per_s, depth, tokens: depth, last_ns: now_ns }
    }

    fn refill(&mut self, now_ns: u64) {
        if now_ns > self.last_ns {
            self.tokens = (self.tokens + self.bits_per_s as i128 * (now_ns - self.last_ns) as i128).min(self.depth);
            self.last_ns = now_ns;
        }
    }

    pub fn may_send(&mut self, now_ns: u64) -> bool {
        self.refill(now_ns);
        self.tokens >= 0
    }

    pub fn charge(&mut self, wire_bytes: u32) {
        self.tokens -= wire_bytes as i128 * 8 * NS_PER_S;
    }

    /// When the band may send again, if it is in debt.
    pub fn ready_at_ns(&self) -> Option<u64> {
        if self.tokens >= 0 {
            return None;
        }
        let debt = -self.tokens;
        let rate = self.bits_per_s as i128;
        Some(self.last_ns + ((debt + rate - 1) / rate) as u64)
    }
}
