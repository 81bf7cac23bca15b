//! Rate meters, their actions, the marking controller and the band rate cap, on a simulated clock. Each test
//! computes what should happen from the arrivals alone (window rates, hold intervals, the controller's fractions)
//! and compares it with what the link did to the packets and what it recorded.

use crate::config::testing::{fifo, kbit, link as full_link, prio};
use crate::link::{Link, Outcome};
use crate::meter::{MeterRecord, RecordKind};
use crate::packet::{build_udp_packet, Packet};
use crate::sim_tests::{link, simulate, MS, S};
use serde_json::{json, Value};

const ECT0: u8 = 2;

/// `ip_len`-byte packets of one flow (ports fixed by `flow`) at `kbit` over [start, end), with this TOS byte;
/// packet ids start at `id0` (id / 10_000_000 is the flow).
fn cbr(flow: u16, id0: u32, kbit: u64, ip_len: u16, start: u64, end: u64, tos: u8) -> Vec<Packet> {
    let gap = (ip_len as u64 + 14) * 8 * S / (kbit * 1000);
    let mut out = Vec::new();
    let (mut t, mut seq) = (start, 0u32);
    while t < end {
        let data = build_udp_packet([10, 0, 1, 2], [10, 0, 2, 2], 10000 + flow, 5201, tos, ip_len, seq);
        out.push(Packet::parse(flow as u32 * 10_000_000 + id0 + seq, t, data).unwrap());
        t += gap;
        seq += 1;
    }
    out
}

fn flow(o: &Outcome) -> u32 {
    o.packet.id / 10_000_000
}

/// A 10 Mbit/s link (nothing queues for long): band 0 takes DSCP 46, band 1 the rest; these meters.
fn metered_link(meters: Value) -> Link {
    link(full_link(0, kbit(10_000), prio(json!([{"dscp": [46], "qdisc": fifo(1000)}, {"qdisc": fifo(1000)}]), meters)))
}

fn meter(per: &str, action: Value) -> Value {
    json!([{"dscp": [46], "per": per, "window_ms": 100, "limit_kbit": 2000, "action": action}])
}

fn records(l: &mut Link, kind: RecordKind) -> Vec<MeterRecord> {
    l.take_meter_records().filter(|r| r.kind == kind).collect()
}

/// 3 Mbit/s for 1 s, then 1 Mbit/s to 3 s: over its 2 Mbit/s limit in the windows ending at 100 ms ... 1000 ms.
fn over_then_under(flow: u16, tos: u8) -> Vec<Packet> {
    let mut a = cbr(flow, 0, 3000, 1000, 0, S, tos);
    a.extend(cbr(flow, 1_000_000, 1000, 1000, S, 3 * S, tos));
    a
}

#[test]
fn demote_moves_the_flow_to_the_lower_band_for_the_hold_and_renews_it_while_over_the_limit() {
    let mut l = metered_link(meter("flow", json!({"kind": "demote", "to_band": 1, "hold_ms": 500})));
    let (fwd, drops) = simulate(&mut l, over_then_under(1, 46 << 2), 4 * S);
    assert!(drops.is_empty());
    // The first window (to 100 ms) is over the limit: holds from 100 ms to 600 ms, renewed (the window to 600 ms
    // is still over) to 1100 ms; the window to 1100 ms is under, so no third.
    for o in &fwd {
        let demoted = (100 * MS..1100 * MS).contains(&o.packet.arrival_ns);
        assert_eq!(o.packet.band, demoted as u8, "packet arriving at {} ns", o.packet.arrival_ns);
    }
    let all: Vec<MeterRecord> = l.take_meter_records().collect();
    let at = |kind: RecordKind| all.iter().filter(|r| r.kind == kind).map(|r| r.t_ns).collect::<Vec<u64>>();
    assert_eq!(at(RecordKind::Start), vec![100 * MS, 600 * MS]);
    assert_eq!(at(RecordKind::End), vec![600 * MS, 1100 * MS]);
    let start = all.iter().find(|r| r.kind == RecordKind::Start).unwrap();
    assert_eq!((start.until_ns, start.limit_bps), (600 * MS, 2_000_000));
    let flow = start.flow.unwrap();
    assert_eq!(
        (flow.src, flow.dst, flow.proto, flow.sport, flow.dport),
        ([10, 0, 1, 2], [10, 0, 2, 2], 17, 10001, 5201)
    );
    // Window records count what was demoted: every packet of band 1.
    let demoted: u32 = all.iter().filter(|r| r.kind == RecordKind::Window).map(|r| r.demoted).sum();
    assert_eq!(demoted as usize, fwd.iter().filter(|o| o.packet.band == 1).count());
}

#[test]
fn ce_all_marks_every_ect_packet_of_the_flow_during_the_hold_and_never_a_not_ect_one() {
    let mut l = metered_link(meter("flow", json!({"kind": "ce_all", "hold_ms": 500})));
    let mut arrivals = over_then_under(1, 46 << 2 | ECT0);
    arrivals.extend(cbr(2, 0, 3000, 1000, 0, 3 * S, 46 << 2));
    let (fwd, drops) = simulate(&mut l, arrivals, 4 * S);
    assert!(drops.is_empty());
    for o in fwd.iter().filter(|o| flow(o) == 1) {
        let held = (100 * MS..1100 * MS).contains(&o.packet.arrival_ns);
        assert_eq!(o.packet.ce_marked, held, "packet arriving at {} ns", o.packet.arrival_ns);
        assert_eq!(o.packet.band, 0);
    }
    assert!(fwd.iter().filter(|o| flow(o) == 2).all(|o| !o.packet.ce_marked));
    // Both flows were over their limit; only flow 1's marks were possible. Marks recorded = CE forwarded.
    let windows = records(&mut l, RecordKind::Window);
    let marked: u32 = windows.iter().map(|r| r.ce_marked).sum();
    assert_eq!(marked as usize, fwd.iter().filter(|o| o.packet.ce_marked).count());
    assert!(marked > 300, "{marked}");
    assert!(l.counters.ecn_marked == marked as u64);
}

#[test]
fn a_class_meter_adds_the_flows_up_a_flow_meter_does_not() {
    // Two ECT flows of 1.5 Mbit/s each: each under a 2 Mbit/s flow limit, together over a class limit.
    let arrivals = || {
        let mut a = cbr(1, 0, 1500, 1000, 0, 2 * S, 46 << 2 | ECT0);
        a.extend(cbr(2, 0, 1500, 1000, 0, 2 * S, 46 << 2 | ECT0));
        a
    };
    let mut per_flow = metered_link(meter("flow", json!({"kind": "ce_all", "hold_ms": 300})));
    let (fwd, _) = simulate(&mut per_flow, arrivals(), 3 * S);
    assert!(fwd.iter().all(|o| !o.packet.ce_marked));
    assert!(records(&mut per_flow, RecordKind::Start).is_empty());
    let mut per_class = metered_link(meter("class", json!({"kind": "ce_all", "hold_ms": 300})));
    let (fwd, _) = simulate(&mut per_class, arrivals(), 3 * S);
    let starts = records(&mut per_class, RecordKind::Start);
    assert!(!starts.is_empty() && starts.iter().all(|r| r.flow.is_none()));
    assert!(fwd
        .iter()
        .filter(|o| o.packet.arrival_ns >= 100 * MS && o.packet.arrival_ns < 2 * S - 100 * MS)
        .all(|o| o.packet.ce_marked));
}

#[test]
fn the_marking_controller_follows_its_rule_window_by_window() {
    // 4 Mbit/s for 0.5 s, then 1.5 Mbit/s: p rises by gain * (4 - 2) / 2 per window, then falls by gain * 0.25.
    let gain = 0.5;
    let mut l = metered_link(meter("flow", json!({"kind": "ce_fraction", "gain": gain, "initial_fraction": 0})));
    let mut arrivals = cbr(1, 0, 4000, 1000, 0, S / 2, 46 << 2 | ECT0);
    arrivals.extend(cbr(1, 1_000_000, 1500, 1000, S / 2, 2 * S, 46 << 2 | ECT0));
    let arrival_times: Vec<(u64, u32)> = arrivals.iter().map(|p| (p.arrival_ns, p.wire_bytes)).collect();
    let (fwd, _) = simulate(&mut l, arrivals, 3 * S);
    let windows = records(&mut l, RecordKind::Window);

    // The controller replayed from the arrivals alone.
    let mut p = 0.0f64;
    let mut expected = Vec::new();
    for k in 0..25u64 {
        let (lo, hi) = (k * 100 * MS, (k + 1) * 100 * MS);
        let bytes: u64 = arrival_times.iter().filter(|(t, _)| (lo..hi).contains(t)).map(|(_, b)| *b as u64).sum();
        let rate_bps = bytes as f64 * 8.0 / 0.1;
        let p_during = p;
        p = (p + gain * (rate_bps - 2e6) / 2e6).clamp(0.0, 1.0);
        if bytes > 0 || p_during > 0.0 || p > 0.0 {
            expected.push((hi, rate_bps, p, p_during));
        }
    }
    assert_eq!(windows.len(), expected.len());
    for (r, (t, rate_bps, p_after, p_during)) in windows.iter().zip(&expected) {
        assert_eq!(r.t_ns, *t);
        assert!((r.rate_bps as f64 - rate_bps).abs() <= 1.0, "{} vs {rate_bps}", r.rate_bps);
        assert!((r.fraction - p_after).abs() < 1e-9, "at {t}: {} vs {p_after}", r.fraction);
        // The marks of the window: the fraction in force during it, within one packet.
        let (lo, hi) = (t - 100 * MS, *t);
        let in_window: Vec<&Outcome> = fwd.iter().filter(|o| (lo..hi).contains(&o.packet.arrival_ns)).collect();
        let marked = in_window.iter().filter(|o| o.packet.ce_marked).count();
        assert_eq!(marked, r.ce_marked as usize);
        assert!(
            (marked as f64 - p_during * in_window.len() as f64).abs() <= 1.0,
            "at {t}: {marked} of {} at p={p_during}",
            in_window.len()
        );
    }
    // It went up to 1 and back to 0.
    assert!(windows.iter().any(|r| r.fraction == 1.0));
    assert_eq!(windows.last().unwrap().fraction, 0.0);
}

#[test]
fn a_rate_cap_holds_its_band_to_the_cap_and_lets_the_others_use_the_rest() {
    let capped = json!([{"dscp": [46], "qdisc": fifo(1000), "rate_cap": {"kbit": 2000, "burst_bytes": 3028}}, {"qdisc": fifo(1000)}]);
    let mut l = link(full_link(0, kbit(10_000), prio(capped.clone(), json!([]))));
    let mut arrivals = cbr(1, 0, 4000, 1000, 0, 5 * S, 46 << 2);
    arrivals.extend(cbr(2, 0, 3000, 1000, 0, 5 * S, 0));
    let (fwd, _) = simulate(&mut l, arrivals, 6 * S);
    let kbit_of = |f: u32| {
        fwd.iter()
            .filter(|o| flow(o) == f && (S..5 * S).contains(&o.packet.dequeue_ns))
            .map(|o| o.packet.wire_bytes as u64)
            .sum::<u64>() as f64
            * 8.0
            / 4.0
            / 1000.0
    };
    assert!((kbit_of(1) - 2000.0).abs() < 2000.0 * 0.01, "{}", kbit_of(1));
    assert!((kbit_of(2) - 3000.0).abs() < 3000.0 * 0.01, "{}", kbit_of(2));
    // The bucket's bound between any two departures: burst + rate * time + one packet.
    let deps: Vec<(u64, u64)> =
        fwd.iter().filter(|o| flow(o) == 1).map(|o| (o.packet.dequeue_ns, o.packet.wire_bytes as u64)).collect();
    for i in (0..deps.len()).step_by(37) {
        let mut bytes = 0u64;
        for &(t, b) in &deps[i..] {
            bytes += b;
            let allowed = 3028.0 + 2e6 / 8.0 * (t - deps[i].0) as f64 / 1e9 + 1014.0;
            assert!(bytes as f64 <= allowed + 1e-6, "{bytes} bytes from {} to {t}", deps[i].0);
        }
    }
    // Alone, the capped band still leaves at the cap (the link waits for the tokens, it does not stall).
    let mut alone = link(full_link(0, kbit(10_000), prio(capped, json!([]))));
    let (fwd, drops) = simulate(&mut alone, cbr(1, 0, 4000, 1000, 0, 5 * S, 46 << 2), 6 * S);
    let sent: u64 =
        fwd.iter().filter(|o| (S..5 * S).contains(&o.packet.dequeue_ns)).map(|o| o.packet.wire_bytes as u64).sum();
    assert!((sent as f64 * 8.0 / 4.0 - 2e6).abs() < 2e4, "{sent}");
    assert!(!drops.is_empty(), "4 Mbit/s into a 2 Mbit/s cap must fill the band's queue");
}

#[test]
fn the_action_log_line_names_the_flow_and_the_numbers() {
    let mut l = metered_link(meter("flow", json!({"kind": "ce_all", "hold_ms": 500})));
    simulate(&mut l, over_then_under(1, 46 << 2 | ECT0), 2 * S);
    let all: Vec<MeterRecord> = l.take_meter_records().collect();
    let line = |r: &MeterRecord| {
        let mut out = Vec::new();
        crate::actions::encode(r, &mut out);
        serde_json::from_slice::<Value>(&out).unwrap()
    };
    let start = line(all.iter().find(|r| r.kind == RecordKind::Start).unwrap());
    assert_eq!(start["event"], "start");
    assert_eq!(start["action"], "ce_all");
    assert_eq!(start["t_ns"], 100_000_000);
    assert_eq!(start["until"], 0.6);
    assert_eq!(
        start["flow"],
        json!({"src": "10.0.1.2", "dst": "10.0.2.2", "proto": 17, "sport": 10001, "dport": 5201})
    );
    let w = line(all.iter().find(|r| r.kind == RecordKind::Window && r.ce_marked > 0).unwrap());
    assert_eq!(w["event"], "window");
    assert_eq!(w["limit_kbit"], 2000.0);
    assert_eq!(w["fraction"], 1.0);
    assert!(w["rate_kbit"].as_f64().unwrap() > 2000.0);
}
