use super::testing::*;
use super::*;
use crate::qdisc::{band_kinds, KINDS};
use serde_json::json;

fn no_trace(_: &str) -> Result<String, String> {
    Err("no files in this test".into())
}

fn trace_1_1_2_4(_: &str) -> Result<String, String> {
    Ok("1\n1\n2\n4\n".to_string())
}

/// One complete link of every rate form and discipline, in the normalised form.
fn complete_links() -> Vec<Value> {
    vec![
        link(25, kbit(1000), json!({"kind": "fifo", "limit_bytes": 37500})),
        link(0, Value::Null, fifo(1000)),
        with(
            link(
                10,
                json!({"schedule": [{"at_s": 0, "kbit": 2000}, {"at_s": 3.5, "kbit": 500}], "burst_bytes": 3028}),
                codel(true),
            ),
            "jitter_ms",
            json!(5),
        ),
        with(
            link(10, json!({"trace": "/t/trace.txt", "trace_offset_ms": 2, "burst_bytes": 3028}), pie(false)),
            "loss_percent",
            json!(1.5),
        ),
        link(25, kbit(2000), sfq(25)),
        with(
            with(link(25, kbit(2000), fifo(100)), "outage", json!({"mean_on_ms": 5000, "mean_off_ms": 200})),
            "loss_gemodel",
            json!({"p_percent": 1, "r_percent": 30, "bad_loss_percent": 80, "good_loss_percent": 0.5}),
        ),
        link(25, kbit(2000), fq_codel(true)),
        link(
            25,
            kbit(18000),
            prio(
                json!([{"dscp": [46], "qdisc": fifo(100), "rate_cap": {"kbit": 2000, "burst_bytes": 3028}}, {"qdisc": fq_codel(false)}]),
                json!([
            {"dscp": [46], "per": "flow", "window_ms": 150, "limit_kbit": 2000, "action": {"kind": "ce_fraction", "gain": 0.5, "initial_fraction": 0}},
            {"dscp": [46, 34], "per": "class", "window_ms": 100, "limit_kbit": 2500.5, "action": {"kind": "demote", "to_band": 1, "hold_ms": 2000}},
            {"dscp": [34], "per": "flow", "window_ms": 100, "limit_kbit": 1000, "action": {"kind": "ce_all", "hold_ms": 1500}}]),
            ),
        ),
        link(
            25,
            kbit(2000),
            prio(
                json!([{"dscp": [46, 34], "qdisc": fifo(100)}, {"dscp": [10], "qdisc": sfq(127)}, {"qdisc": fq_codel(false)}]),
                json!([]),
            ),
        ),
    ]
}

/// Every leaf field of `v` (objects only; array items by index), as (path for the error, JSON pointer).
fn fields(v: &Value, path: &str, pointer: &str, out: &mut Vec<(String, String)>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let (p, q) =
                    (if path.is_empty() { k.clone() } else { format!("{path}.{k}") }, format!("{pointer}/{k}"));
                out.push((p.clone(), q.clone()));
                fields(x, &p, &q, out);
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                fields(x, &format!("{path}[{i}]"), &format!("{pointer}/{i}"), out);
            }
        }
        _ => {}
    }
}

fn remove(v: &Value, pointer: &str) -> Value {
    let mut v = v.clone();
    let (parent, key) = pointer.rsplit_once('/').unwrap();
    v.pointer_mut(parent).unwrap().as_object_mut().unwrap().remove(key);
    v
}

#[test]
fn parses_a_complete_fifo_link() {
    let c = parse_link(&link(25, kbit(1000), json!({"kind": "fifo", "limit_bytes": 37500})), &no_trace).unwrap();
    assert_eq!(c.delay_ms, 25.0);
    assert_eq!(c.jitter_ms, 0.0);
    assert_eq!(c.loss_percent, 0.0);
    assert_eq!(
        c.rate,
        RateConfig::Schedule { steps: vec![RateStep { at_ns: 0, bits_per_s: 1_000_000 }], burst_bytes: 3028 }
    );
    assert_eq!(c.qdisc, QdiscConfig::Fifo(FifoConfig { limit_packets: None, limit_bytes: Some(37500) }));
}

#[test]
fn every_missing_field_is_an_error_naming_it() {
    let mut checked = 0;
    for v in complete_links() {
        parse_link(&v, &trace_1_1_2_4).unwrap();
        let mut all = Vec::new();
        fields(&v, "", "", &mut all);
        for (path, pointer) in all {
            // These choose the form of their object, and a fifo's limit is one of two fields (both checked below).
            if ["rate.kbit", "rate.schedule", "rate.trace"].contains(&path.as_str())
                || path.ends_with("].dscp")
                || path.ends_with("limit_bytes")
            {
                continue;
            }
            let e = parse_link(&remove(&v, &pointer), &trace_1_1_2_4).expect_err(&path);
            assert_eq!(e.field, path, "{e}");
            checked += 1;
        }
    }
    assert!(checked > 50, "{checked}");
    // The rate's form and a band's DSCP list.
    let e = parse_link(&link(0, json!({"burst_bytes": 3028}), fifo(10)), &no_trace).unwrap_err();
    assert_eq!(e.field, "rate");
    let prio = prio(json!([{"qdisc": fifo(10)}, {"qdisc": fifo(10)}]), json!([]));
    assert_eq!(parse_link(&link(0, kbit(1000), prio), &no_trace).unwrap_err().field, "qdisc.bands[0].dscp");
    // A fifo needs one of its two limits.
    let e = parse_link(&link(0, kbit(1000), json!({"kind": "fifo"})), &no_trace).unwrap_err();
    assert_eq!(e.field, "qdisc.limit_packets");
    assert!(e.to_string().contains("limit_bytes"), "{e}");
}

#[test]
fn unknown_fields_are_refused_at_every_level() {
    let cases = [
        ("/", "extra"),
        ("/rate", "rate.extra"),
        ("/rate/schedule/1", "rate.schedule[1].extra"),
        ("/qdisc", "qdisc.extra"),
        ("/qdisc/bands/1", "qdisc.bands[1].extra"),
        ("/qdisc/bands/2/qdisc", "qdisc.bands[2].qdisc.extra"),
        ("/qdisc/bands/0/rate_cap", "qdisc.bands[0].rate_cap.extra"),
    ];
    let schedule = link(
        0,
        json!({"schedule": [{"at_s": 0, "kbit": 2000}, {"at_s": 1, "kbit": 500}], "burst_bytes": 3028}),
        fifo(10),
    );
    let mut prio = complete_links().pop().unwrap();
    prio["qdisc"]["bands"][0]["rate_cap"] = json!({"kbit": 2000, "burst_bytes": 3028});
    for (pointer, field) in cases {
        let mut v = if pointer.starts_with("/qdisc") { prio.clone() } else { schedule.clone() };
        let target = if pointer == "/" { &mut v } else { v.pointer_mut(pointer).unwrap() };
        target.as_object_mut().unwrap().insert("extra".into(), json!(1));
        assert_eq!(parse_link(&v, &no_trace).unwrap_err().field, field);
    }
    let metered = &complete_links()[complete_links().len() - 2];
    for (pointer, field) in
        [("/qdisc/meters/0", "qdisc.meters[0].extra"), ("/qdisc/meters/1/action", "qdisc.meters[1].action.extra")]
    {
        let mut v = metered.clone();
        v.pointer_mut(pointer).unwrap().as_object_mut().unwrap().insert("extra".into(), json!(1));
        assert_eq!(parse_link(&v, &no_trace).unwrap_err().field, field);
    }
    // limit_ms is netem's to convert: the bottleneck only takes packets or bytes.
    let e = parse_link(&link(25, kbit(1000), json!({"kind": "fifo", "limit_ms": 300})), &no_trace).unwrap_err();
    assert_eq!(e.field, "qdisc.limit_ms");
    let e = parse_link(&link(25, kbit(1000), json!({"kind": "sfq", "limit_ms": 300, "limit_packets": 25, "quantum_bytes": 1514, "perturb_s": 0, "divisor": 1024})), &no_trace).unwrap_err();
    assert_eq!(e.field, "qdisc.limit_ms");
}

#[test]
fn names_the_field_out_of_range() {
    let bad = |v: Value| parse_link(&v, &no_trace).unwrap_err().field;
    assert_eq!(bad(with(link(0, Value::Null, fifo(10)), "delay_ms", json!(-1))), "delay_ms");
    let back = json!([{"at_s": 2, "delay_ms": 50}, {"at_s": 1, "delay_ms": 25}]);
    assert_eq!(bad(with(link(0, Value::Null, fifo(10)), "delay_schedule", back)), "delay_schedule[1].at_s");
    let at0 = json!([{"at_s": 0, "delay_ms": 50}]);
    assert_eq!(bad(with(link(0, Value::Null, fifo(10)), "delay_schedule", at0)), "delay_schedule[0].at_s");
    assert_eq!(bad(with(link(0, Value::Null, fifo(10)), "loss_percent", json!(150))), "loss_percent");
    assert_eq!(bad(with(link(0, Value::Null, fifo(10)), "jitter_ms", json!("5"))), "jitter_ms");
    assert_eq!(bad(link(0, json!({"kbit": 0, "burst_bytes": 3028}), fifo(10))), "rate.kbit");
    assert_eq!(bad(link(0, json!({"kbit": 0.0001, "burst_bytes": 3028}), fifo(10))), "rate.kbit");
    assert_eq!(bad(link(0, json!({"kbit": 1000, "burst_bytes": 1000}), fifo(10))), "rate.burst_bytes");
    assert_eq!(bad(link(0, json!({"kbit": 1000, "trace": "/x", "burst_bytes": 3028}), fifo(10))), "rate");
    assert_eq!(
        bad(link(0, json!({"schedule": [{"at_s": 1, "kbit": 500}], "burst_bytes": 3028}), fifo(10))),
        "rate.schedule[0].at_s"
    );
    assert_eq!(
        bad(link(
            0,
            json!({"schedule": [{"at_s": 0, "kbit": 500}, {"at_s": 5, "kbit": 1}, {"at_s": 2, "kbit": 1}], "burst_bytes": 3028}),
            fifo(10)
        )),
        "rate.schedule[2].at_s"
    );
    assert_eq!(bad(link(0, json!({"schedule": [], "burst_bytes": 3028}), fifo(10))), "rate.schedule");
    assert_eq!(bad(link(0, json!({"trace": "relative.txt", "burst_bytes": 3028}), fifo(10))), "rate.trace");
    assert_eq!(bad(link(0, kbit(1000), json!({"kind": "fifo", "limit_packets": 0}))), "qdisc.limit_packets");
    assert_eq!(bad(link(0, kbit(1000), json!({"kind": "fifo", "limit_packets": 10, "limit_bytes": 10}))), "qdisc");
    assert_eq!(bad(link(0, kbit(1000), with(codel(false), "target_ms", json!(-1)))), "qdisc.target_ms");
    assert_eq!(bad(link(0, kbit(1000), with(pie(false), "alpha", json!(33)))), "qdisc.alpha");
    assert_eq!(bad(link(0, kbit(1000), with(pie(false), "timer_hz", json!(200)))), "qdisc.timer_hz");
    assert_eq!(bad(link(0, kbit(1000), with(sfq(127), "limit_packets", json!(1)))), "qdisc.limit_packets");
    assert_eq!(bad(link(0, kbit(1000), with(fq_codel(true), "ecn", json!(1)))), "qdisc.ecn");
    let e = parse_link(&link(0, kbit(1000), json!({"kind": "red"})), &no_trace).unwrap_err();
    assert_eq!(e.field, "qdisc.kind");
    assert!(e.to_string().contains("fq_codel"), "{e}");
}

#[test]
fn names_the_field_out_of_range_in_a_prio() {
    let bad = |v: Value| parse_link(&v, &no_trace).unwrap_err().field;
    let band = |dscp: Value| {
        prio(
            json!([{"dscp": dscp, "qdisc": fifo(10)}, {"dscp": [46], "qdisc": fifo(10)}, {"qdisc": fifo(10)}]),
            json!([]),
        )
    };
    assert_eq!(bad(link(0, kbit(1000), band(json!([64])))), "qdisc.bands[0].dscp");
    assert_eq!(bad(link(0, kbit(1000), band(json!([46])))), "qdisc.bands[1].dscp");
    let last_with_dscp = prio(json!([{"dscp": [46], "qdisc": fifo(10)}, {"dscp": [0], "qdisc": fifo(10)}]), json!([]));
    assert_eq!(bad(link(0, kbit(1000), last_with_dscp)), "qdisc.bands[1].dscp");
    let nested = prio(json!([{"dscp": [46], "qdisc": fifo(10)}, {"qdisc": {"kind": "prio", "bands": []}}]), json!([]));
    assert_eq!(bad(link(0, kbit(1000), nested)), "qdisc.bands[1].qdisc.kind");
    // Rate caps and meters.
    let two = json!([{"dscp": [46], "qdisc": fifo(10)}, {"qdisc": fifo(10)}]);
    let meter =
        |action: Value| json!([{"dscp": [46], "per": "flow", "window_ms": 150, "limit_kbit": 2000, "action": action}]);
    let capped = prio(
        json!([{"dscp": [46], "qdisc": fifo(10), "rate_cap": {"kbit": 0, "burst_bytes": 3028}}, {"qdisc": fifo(10)}]),
        json!([]),
    );
    assert_eq!(bad(link(0, kbit(1000), capped)), "qdisc.bands[0].rate_cap.kbit");
    assert_eq!(
        bad(link(0, kbit(1000), prio(two.clone(), meter(json!({"kind": "demote", "to_band": 2, "hold_ms": 1000}))))),
        "qdisc.meters[0].action.to_band"
    );
    assert_eq!(
        bad(link(
            0,
            kbit(1000),
            prio(two.clone(), meter(json!({"kind": "ce_fraction", "gain": 1, "initial_fraction": 1.5})))
        )),
        "qdisc.meters[0].action.initial_fraction"
    );
    assert_eq!(
        bad(link(0, kbit(1000), prio(two.clone(), meter(json!({"kind": "police"}))))),
        "qdisc.meters[0].action.kind"
    );
    assert_eq!(
        bad(link(0, kbit(1000), prio(two.clone(), meter(json!({"kind": "ce_all", "hold_ms": 0}))))),
        "qdisc.meters[0].action.hold_ms"
    );
    let mut per = prio(two, meter(json!({"kind": "ce_all", "hold_ms": 10})));
    per["meters"][0]["per"] = json!("host");
    assert_eq!(bad(link(0, kbit(1000), per)), "qdisc.meters[0].per");
}

#[test]
fn reads_a_trace_and_its_average_rate() {
    let traced =
        |offset: u64| link(0, json!({"trace": "/t", "trace_offset_ms": offset, "burst_bytes": 3028}), fifo(10));
    let c = parse_link(&traced(3), &trace_1_1_2_4).unwrap();
    match &c.rate {
        RateConfig::Trace { opportunities_ms, period_ms, offset_ms, .. } => {
            assert_eq!(opportunities_ms, &vec![1, 1, 2, 4]);
            assert_eq!(*period_ms, 4);
            assert_eq!(*offset_ms, 3);
        }
        r => panic!("{r:?}"),
    }
    assert_eq!(c.rate.first_bits_per_s(), Some(4 * 1514 * 8 * 1000 / 4));
    let unreadable = parse_link(&traced(0), &no_trace).unwrap_err();
    assert_eq!(unreadable.field, "rate.trace");
}

#[test]
fn a_trace_offset_is_within_the_trace_and_only_for_a_trace() {
    let traced =
        |offset: u64| link(0, json!({"trace": "/t", "trace_offset_ms": offset, "burst_bytes": 3028}), fifo(10));
    let past_the_end = parse_link(&traced(4), &trace_1_1_2_4).unwrap_err();
    assert_eq!(past_the_end.field, "rate.trace_offset_ms");
    assert!(past_the_end.to_string().contains("period, its last timestamp (4 ms"), "{past_the_end}");
    let with_kbit = link(0, json!({"kbit": 1000, "trace_offset_ms": 0, "burst_bytes": 3028}), fifo(10));
    let e = parse_link(&with_kbit, &no_trace).unwrap_err();
    assert_eq!(e.field, "rate.trace_offset_ms");
    assert!(e.to_string().contains("only for a trace"), "{e}");
}

#[test]
fn writes_back_exactly_the_normalised_link_it_read() {
    for v in complete_links() {
        let c = parse_link(&v, &trace_1_1_2_4).unwrap();
        assert_eq!(c.to_json(), v);
    }
    // A schedule of a single step at 0 is a constant rate; kbit is bits/s / 1000.
    let one_step = link(0, json!({"schedule": [{"at_s": 0, "kbit": 1500.5}], "burst_bytes": 4000}), fifo(10));
    assert_eq!(
        parse_link(&one_step, &no_trace).unwrap().to_json()["rate"],
        json!({"kbit": 1500.5, "burst_bytes": 4000})
    );
    // The exact text of the default forward link (1 Mbit/s, DropTail 300 ms = 37500 bytes).
    let text = parse_link(&link(25, kbit(1000), json!({"kind": "fifo", "limit_bytes": 37500})), &no_trace)
        .unwrap()
        .to_json()
        .to_string();
    assert_eq!(
        text,
        r#"{"delay_ms":25,"delay_schedule":[],"jitter_ms":0,"loss_gemodel":null,"loss_percent":0,"outage":null,"qdisc":{"kind":"fifo","limit_bytes":37500},"rate":{"burst_bytes":3028,"kbit":1000}}"#
    );
}

#[test]
fn an_array_in_place_of_an_object_is_refused() {
    // serde derive would read these as the objects' fields in order.
    let capped =
        prio(json!([{"dscp": [46], "qdisc": fifo(10), "rate_cap": [2000, 3028]}, {"qdisc": fifo(10)}]), json!([]));
    let e = parse_link(&link(0, kbit(1000), capped), &no_trace).unwrap_err();
    assert_eq!(e.field, "qdisc.bands[0].rate_cap", "{e}");
    let e = parse_link(&link(0, json!([1000, [], "/t", 3028]), fifo(10)), &no_trace).unwrap_err();
    assert_eq!(e.field, "rate", "{e}");
    let e = parse_link(&json!([0, [], 0, 0, null, null, null, fifo(10)]), &no_trace).unwrap_err();
    assert_eq!(e.field, "(link)", "{e}");
}

/// One link of each leaf discipline and of dualpi2 at the top, and a prio with each leaf in a band (the prio last).
fn every_discipline() -> Vec<Value> {
    let leaves =
        [fifo(10), json!({"kind": "fifo", "limit_bytes": 3000}), codel(false), pie(true), sfq(127), fq_codel(true)];
    let mut links: Vec<Value> = leaves.iter().map(|q| link(0, kbit(1000), q.clone())).collect();
    // dualpi2 is no band's discipline: at the top only.
    links.push(link(0, kbit(1000), dualpi2()));
    let mut bands: Vec<Value> =
        leaves.iter().enumerate().map(|(i, q)| json!({"dscp": [i + 10], "qdisc": q.clone()})).collect();
    bands.push(json!({"qdisc": fifo(10), "rate_cap": {"kbit": 500.5, "burst_bytes": 3028}}));
    links.push(link(0, kbit(1000), prio(Value::Array(bands), json!([]))));
    links
}

#[test]
fn an_unknown_field_in_a_discipline_is_refused_naming_its_path() {
    for v in every_discipline() {
        let q = &v["qdisc"];
        if q["kind"] == "prio" {
            for (i, band) in q["bands"].as_array().unwrap().iter().enumerate() {
                let mut bad = v.clone();
                bad["qdisc"]["bands"][i]["qdisc"]["extra"] = json!(1);
                let e = parse_link(&bad, &no_trace).unwrap_err();
                assert_eq!(e.field, format!("qdisc.bands[{i}].qdisc.extra"), "{} {e}", band["qdisc"]["kind"]);
            }
        }
        let mut bad = v.clone();
        bad["qdisc"]["extra"] = json!(1);
        let e = parse_link(&bad, &no_trace).unwrap_err();
        assert_eq!(e.field, "qdisc.extra", "{} {e}", q["kind"]);
        assert!(e.to_string().contains("is not a known field"), "{e}");
    }
    // A value of the wrong type inside a band, or inside a meter's action, is named the same way.
    let mut v = every_discipline().pop().unwrap();
    v["qdisc"]["bands"][3]["qdisc"]["alpha"] = json!(1.5);
    assert_eq!(parse_link(&v, &no_trace).unwrap_err().field, "qdisc.bands[3].qdisc.alpha");
    let two = json!([{"dscp": [46], "qdisc": fifo(10)}, {"qdisc": fifo(10)}]);
    let meter = json!([{"dscp": [46], "per": "flow", "window_ms": 150, "limit_kbit": 2000, "action": {"kind": "ce_all", "hold_ms": "long"}}]);
    let e = parse_link(&link(0, kbit(1000), prio(two, meter)), &no_trace).unwrap_err();
    assert_eq!(e.field, "qdisc.meters[0].action.hold_ms", "{e}");
}

#[test]
fn a_missing_discipline_field_is_refused_naming_it() {
    // Every kind but fifo (exactly one of two limits: without it, the object is at fault) and prio (its own test).
    let leaves = every_discipline().into_iter().map(|v| v["qdisc"].clone());
    for q in leaves.filter(|q| q["kind"] != "fifo" && q["kind"] != "prio") {
        for key in q.as_object().unwrap().keys().filter(|k| *k != "kind") {
            let mut without = q.clone();
            without.as_object_mut().unwrap().remove(key);
            let e = parse_link(&link(0, kbit(1000), without.clone()), &no_trace).unwrap_err();
            assert_eq!(e.field, format!("qdisc.{key}"), "{e}");
            assert!(e.to_string().contains("is required"), "{e}");
            if q["kind"] == "dualpi2" {
                continue;
            }
            let in_band = prio(json!([{"dscp": [46], "qdisc": without}, {"qdisc": fifo(10)}]), json!([]));
            let e = parse_link(&link(0, kbit(1000), in_band), &no_trace).unwrap_err();
            assert_eq!(e.field, format!("qdisc.bands[0].qdisc.{key}"), "{e}");
        }
    }
}

#[test]
fn every_discipline_reads_back_what_it_writes() {
    let mut kinds = Vec::new();
    for v in every_discipline().into_iter().chain(complete_links()) {
        let c = parse_link(&v, &trace_1_1_2_4).unwrap();
        let again = parse_link(&c.to_json(), &trace_1_1_2_4).unwrap();
        assert_eq!(again, c, "{v}");
        assert_eq!(again.to_json(), v);
        kinds.push(v["qdisc"]["kind"].as_str().unwrap().to_string());
    }
    for kind in KINDS {
        assert!(kinds.iter().any(|k| k == kind), "{kind}");
    }
    // Every kind a band may be, in a band.
    let prio = every_discipline().pop().unwrap();
    let in_bands: Vec<&str> =
        prio["qdisc"]["bands"].as_array().unwrap().iter().map(|b| b["qdisc"]["kind"].as_str().unwrap()).collect();
    for kind in band_kinds() {
        assert!(in_bands.contains(&kind), "{kind} in a band");
    }
}

#[test]
fn dualpi2_is_refused_as_a_band_discipline() {
    let in_band = prio(json!([{"dscp": [46], "qdisc": dualpi2()}, {"qdisc": fifo(10)}]), json!([]));
    let e = parse_link(&link(0, kbit(1000), in_band), &no_trace).unwrap_err();
    assert_eq!(e.field, "qdisc.bands[0].qdisc.kind", "{e}");
    assert!(e.to_string().contains("cannot be dualpi2 inside a prio band"), "{e}");
}

#[test]
fn dualpi2_refuses_what_the_schema_refuses() {
    let bad = |field: &str, v: Value| {
        parse_link(&link(0, kbit(1000), with(dualpi2(), field, v)), &no_trace).unwrap_err().field
    };
    assert_eq!(bad("alpha", json!(0)), "qdisc.alpha");
    assert_eq!(bad("beta", json!(-1)), "qdisc.beta");
    assert_eq!(bad("coupling_factor", json!(0)), "qdisc.coupling_factor");
    assert_eq!(bad("coupling_factor", json!(256)), "qdisc.coupling_factor");
    assert_eq!(bad("tupdate_ms", json!(0)), "qdisc.tupdate_ms");
    assert_eq!(bad("step_thresh_ms", json!(-0.5)), "qdisc.step_thresh_ms");
    assert_eq!(bad("limit_packets", json!(0)), "qdisc.limit_packets");
}

/// The kinds the bottleneck reads are the schema's, so a kind added to one and not the other fails here.
#[test]
fn the_kinds_are_the_schemas() {
    let schema: Value = serde_json::from_str(include_str!("../../../../scenarios/schema.json")).unwrap();
    let kinds =
        |v: &Value| -> Vec<String> { v.as_array().unwrap().iter().map(|k| k.as_str().unwrap().to_string()).collect() };
    let defs = &schema["definitions"];
    assert_eq!(kinds(&defs["qdisc"]["properties"]["kind"]["enum"]), KINDS);
    assert_eq!(kinds(&defs["leaf_qdisc"]["allOf"][1]["properties"]["kind"]["enum"]), band_kinds().collect::<Vec<_>>());
}

#[test]
fn loss_models_are_read_checked_and_written_back() {
    let v = complete_links().into_iter().find(|v| !v["outage"].is_null()).unwrap();
    let c = parse_link(&v, &no_trace).unwrap();
    assert_eq!(c.outage, Some(crate::loss::OutageConfig { mean_on_ms: 5000.0, mean_off_ms: 200.0 }));
    assert_eq!(c.loss_gemodel.as_ref().map(|g| (g.p_percent, g.bad_loss_percent)), Some((1.0, 80.0)));
    assert_eq!(c.to_json(), v);
    let bad = |key: &str, value: Value| parse_link(&with(v.clone(), key, value), &no_trace).unwrap_err();
    assert_eq!(bad("outage", json!({"mean_on_ms": 0, "mean_off_ms": 200})).field, "outage.mean_on_ms");
    let ge = json!({"p_percent": 1, "r_percent": 130, "bad_loss_percent": 80, "good_loss_percent": 0});
    assert_eq!(bad("loss_gemodel", ge).field, "loss_gemodel.r_percent");
    let e = bad("loss_percent", json!(1));
    assert_eq!(e.field, "loss_gemodel");
    assert!(e.to_string().contains("loss_percent"), "{e}");
}
