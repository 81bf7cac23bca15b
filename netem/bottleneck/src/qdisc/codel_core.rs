//! The CoDel control law shared by `codel` and `fq_codel`: RFC 8289 (Controlled Delay Active Queue Management),
//! following Linux include/net/codel_impl.h: a packet is a drop candidate when its sojourn time is above `target`
//! and more than one MTU is queued; the first drop comes once that has lasted `interval`, the next ones at
//! interval/sqrt(count) after the previous; re-entering the dropping state soon after leaving it resumes near the
//! old count. ECN-capable packets are marked CE instead of dropped when `ecn` is on.
//! 1/sqrt(count) is computed exactly here (Linux uses a Newton step approximation).

use super::Dropped;
use crate::packet::{Event, Packet};

/// Linux psched_mtu() on an Ethernet veth: MTU 1500 + 14 bytes of header.
pub const MTU_BYTES: u64 = 1514;

#[derive(Debug, Clone)]
pub struct CodelParams {
    pub target_ns: u64,
    pub interval_ns: u64,
    pub ecn: bool,
    pub mtu_bytes: u64,
}

impl CodelParams {
    pub fn new(target_ms: f64, interval_ms: f64, ecn: bool) -> CodelParams {
        CodelParams {
            target_ns: super::ms_to_ns(target_ms),
            interval_ns: super::ms_to_ns(interval_ms),
            ecn,
            mtu_bytes: MTU_BYTES,
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct CodelVars {
    pub count: u32,
    pub lastcount: u32,
    pub dropping: bool,
    /// 0 = not above target.
    pub first_above_time_ns: u64,
    pub drop_next_ns: u64,
    /// Sojourn time of the last packet dequeued.
    pub ldelay_ns: u64,
}

/// The queue CoDel takes packets from; `backlog_bytes` is what the `mtu` check looks at (the whole qdisc's
/// backlog in fq_codel, as in Linux), after the packet just taken.
pub trait CodelQueue {
    fn pop(&mut self) -> Option<Packet>;
    fn backlog_bytes(&self) -> u64;
}

fn control_law(t_ns: u64, interval_ns: u64, count: u32) -> u64 {
    t_ns + (interval_ns as f64 / (count.max(1) as f64).sqrt()) as u64
}

fn should_drop(
    p: Option<&Packet>,
    q: &dyn CodelQueue,
    vars: &mut CodelVars,
    params: &CodelParams,
    now_ns: u64,
) -> bool {
    let Some(p) = p else {
        vars.first_above_time_ns = 0;
        return false;
    };
    vars.ldelay_ns = now_ns.saturating_sub(p.enqueue_ns);
    if vars.ldelay_ns < params.target_ns || q.backlog_bytes() <= params.mtu_bytes {
        // Went below target: stay below for at least one interval before dropping again.
        vars.first_above_time_ns = 0;
        return false;
    }
    if vars.first_above_time_ns == 0 {
        vars.first_above_time_ns = now_ns + params.interval_ns;
        false
    } else {
        now_ns >= vars.first_above_time_ns
    }
}

/// codel_dequeue(): the next packet to send, dropping (or marking) on the way as the control law says.
pub fn codel_dequeue(
    q: &mut dyn CodelQueue,
    vars: &mut CodelVars,
    params: &CodelParams,
    now_ns: u64,
    drops: &mut Vec<Dropped>,
) -> Option<Packet> {
    let mut p = match q.pop() {
        Some(p) => p,
        None => {
            vars.dropping = false;
            return None;
        }
    };
    let drop = should_drop(Some(&p), q, vars, params, now_ns);
    if vars.dropping {
        if !drop {
            vars.dropping = false;
        } else if now_ns >= vars.drop_next_ns {
            // Possibly several drops if the queue stayed above target past several drop times.
            while vars.dropping && now_ns >= vars.drop_next_ns {
                vars.count += 1;
                if params.ecn && p.set_ce() {
                    vars.drop_next_ns = control_law(vars.drop_next_ns, params.interval_ns, vars.count);
                    return Some(p);
                }
                drops.push(Dropped { packet: p, event: Event::DroppedAqm });
                match q.pop() {
                    Some(next) => p = next,
                    None => {
                        vars.dropping = false;
                        vars.first_above_time_ns = 0;
                        return None;
                    }
                }
                if !should_drop(Some(&p), q, vars, params, now_ns) {
                    vars.dropping = false;
                } else {
                    vars.drop_next_ns = control_law(vars.drop_next_ns, params.interval_ns, vars.count);
                }
            }
        }
    } else if drop {
        let mut out = Some(p);
        if !(params.ecn && out.as_mut().unwrap().set_ce()) {
            drops.push(Dropped { packet: out.take().unwrap(), event: Event::DroppedAqm });
            out = q.pop();
            // Linux re-evaluates the next packet (which resets first_above_time if it is below target).
            should_drop(out.as_ref(), q, vars, params, now_ns);
        }
        vars.dropping = true;
        // Re-entering soon after the last dropping state: start near the drop rate that controlled the queue.
        let delta = vars.count.wrapping_sub(vars.lastcount);
        if delta > 1 && delta < u32::MAX / 2 && now_ns.wrapping_sub(vars.drop_next_ns) < 16 * params.interval_ns {
            vars.count = delta;
        } else {
            vars.count = 1;
        }
        vars.lastcount = vars.count;
        vars.drop_next_ns = control_law(now_ns, params.interval_ns, vars.count);
        return out;
    }
    Some(p)
}
