//! Per-stream recurrences that a vectorised numpy expression cannot state.

/// RFC 3550 section 6.4.1 interarrival jitter, in seconds, after each packet in arrival order.
/// `recv_ns` are arrival times, `rtp_ts` the packets' RTP timestamps, `clock_hz` the RTP clock.
/// D(i-1, i) = (R_i - R_{i-1}) - (S_i - S_{i-1}) in timestamp units; J += (|D| - J) / 16. J is 0 after the first.
pub fn rfc3550_jitter_s(recv_ns: &[i64], rtp_ts: &[u32], clock_hz: f64) -> Vec<f64> {
    let mut out = Vec::with_capacity(recv_ns.len());
    let mut j = 0.0f64;
    for i in 0..recv_ns.len() {
        if i > 0 {
            let r = (recv_ns[i] - recv_ns[i - 1]) as f64 * clock_hz / 1e9;
            let s = rtp_ts[i].wrapping_sub(rtp_ts[i - 1]) as i32 as f64;
            j += ((r - s).abs() - j) / 16.0;
        }
        out.push(j / clock_hz);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_transit_gives_zero_and_one_late_packet_decays() {
        let recv = [0, 20_000_000, 40_000_000, 60_000_000];
        let ts = [0u32, 1800, 3600, 5400];
        assert!(rfc3550_jitter_s(&recv, &ts, 90_000.0).iter().all(|&j| j == 0.0));
        let recv = [0, 30_000_000, 40_000_000];
        let j = rfc3550_jitter_s(&recv, &ts[..3], 90_000.0);
        assert!((j[1] - 0.010 / 16.0).abs() < 1e-12);
        let expect2 = 0.010 / 16.0 + (0.010 - 0.010 / 16.0) / 16.0;
        assert!((j[2] - expect2).abs() < 1e-12);
    }
}
