//! The real-time loop: NFQUEUE packets in, the link model (link.rs) deciding, verdicts out at the due times,
//! every packet logged. One thread; waits with an absolute timerfd armed shortly before the next due time, then
//! spins the rest, within a budget so that a SCHED_FIFO process never spins a whole core. Nothing on this loop
//! waits for the log or the stats: they go to writer threads through preallocated rings (writer.rs), and the
//! per-iteration lists are kept and reused, so a steady loop does not allocate beyond the packets themselves.

use crate::clock::{self, Waiter};
use crate::gtlog::GroundTruthLog;
use crate::lateness::Lateness;
use crate::link::{Link, Outcome};
use crate::nfq::{Queue, RawPacket};
use crate::packet::{Event, Packet};
use crate::stats::{Sample, StatsWriter};
use crate::steps::{ScheduleLog, ScheduleSteps};
use std::collections::BTreeSet;
use std::io::{self, Write};

/// Arm the timer this long before a due time and spin the rest (a wake-up here costs 30-65 us).
const SPIN_NS: u64 = 50_000;
/// At most this much spinning per window (10%): several instances (one per direction, several runs) may share
/// a core, and SCHED_FIFO tasks that together use 95% of a CPU get throttled by the kernel for the rest of the
/// second. Past the budget, the timer alone wakes us.
const SPIN_WINDOW_NS: u64 = 100_000_000;
const SPIN_BUDGET_NS: u64 = 10_000_000;
/// How often problems (kernel overruns, lost log records, a failed writer) are looked for and reported.
const REPORT_NS: u64 = 500_000_000;

pub struct Runtime {
    pub queue: Queue,
    pub link: Link,
    pub log: GroundTruthLog,
    pub stats: Option<StatsWriter>,
    pub stats_interval_ns: u64,
    /// The meters' action log (only when the link has meters).
    pub actions: Option<crate::actions::ActionLog>,
    actions_lost_reported: u64,
    /// The link's capacity and delay steps and their log (only with --schedule): each recorded as it comes into force.
    pub schedule: Option<(ScheduleSteps, ScheduleLog)>,
    schedule_lost_reported: u64,
    /// --t0-file: the time 0 a SIGUSR1 asks for (`restart_time_zero`).
    pub t0_file: Option<std::path::PathBuf>,
    /// --flow-delays-file: the flow table a SIGUSR2 asks for (`reload_flow_delays`).
    pub flow_delays_file: Option<std::path::PathBuf>,
    /// --own-clock-arrivals: a packet arrives when this loop reads it, not at the kernel's timestamp (a hop of a
    /// chain: the kernel's is the packet's arrival in the router, before the hops ahead of this one).
    pub own_clock_arrivals: bool,
    /// Packet ids the kernel holds for us, for batch verdicts.
    held: BTreeSet<u32>,
    kernel_overruns: u64,
    overruns_reported: u64,
    log_lost_reported: u64,
    kernel_timestamped: u64,
    /// How late the forwarded packets were released (into every stats line).
    lateness: Lateness,
    /// Reused lists (the loop's own, kept so that it does not allocate them per iteration).
    drops: Vec<Outcome>,
    due: Vec<Outcome>,
    plain_ids: Vec<u32>,
}

impl Runtime {
    pub fn new(
        queue: Queue,
        link: Link,
        log: GroundTruthLog,
        stats: Option<StatsWriter>,
        stats_interval_ns: u64,
        actions: Option<crate::actions::ActionLog>,
    ) -> Runtime {
        Runtime {
            queue,
            link,
            log,
            stats,
            stats_interval_ns,
            actions,
            actions_lost_reported: 0,
            schedule: None,
            schedule_lost_reported: 0,
            t0_file: None,
            flow_delays_file: None,
            own_clock_arrivals: false,
            held: BTreeSet::new(),
            kernel_overruns: 0,
            overruns_reported: 0,
            log_lost_reported: 0,
            kernel_timestamped: 0,
            lateness: Lateness::default(),
            drops: Vec::with_capacity(4096),
            due: Vec::with_capacity(4096),
            plain_ids: Vec::with_capacity(4096),
        }
    }

    /// Runs until SIGTERM/SIGINT, then releases what it holds and returns. SIGUSR1 restarts the rate schedule.
    pub fn run(&mut self) -> io::Result<()> {
        let mut waiter = Waiter::new(self.queue.fd())?;
        let mut raw: Vec<RawPacket> = Vec::with_capacity(4096);
        let start = clock::now_ns();
        let mut next_stats = start;
        let mut next_report = start + REPORT_NS;
        let mut spin = SpinBudget { window_start: start, spun_ns: 0 };
        loop {
            self.take_arrivals(&mut raw)?;
            self.give_drop_verdicts()?;
            let now = clock::now_ns();
            self.link.advance(now);
            self.give_drop_verdicts()?;
            self.release_due(now)?;
            self.write_actions();
            self.record_steps(now);

            if now >= next_report {
                next_report = now + REPORT_NS;
                self.report()?;
            }
            if self.stats.is_some() && now >= next_stats {
                self.write_stats(now);
                next_stats += self.stats_interval_ns;
                if next_stats <= now {
                    next_stats = now + self.stats_interval_ns;
                }
            }

            let woken = wait_until(&mut waiter, self.next_wake_ns(next_stats), &mut spin)?;
            if woken.restart_schedule {
                let t0 = self.requested_time_zero(clock::now_ns());
                self.link.restart_schedule(t0);
                if let Some((steps, _)) = self.schedule.as_mut() {
                    steps.restart(t0);
                }
            }
            if woken.reload_flow_delays {
                self.reload_flow_delays()?;
            }
            if woken.signalled {
                return self.shutdown();
            }
        }
    }

    /// Takes what the kernel queued since the last call: each IPv4 packet arrives at the link (at its kernel
    /// timestamp when it has one), anything else is let pass.
    fn take_arrivals(&mut self, raw: &mut Vec<RawPacket>) -> io::Result<()> {
        let report = self.queue.receive(raw, 4096)?;
        if report.overruns > 0 {
            self.kernel_overruns += report.overruns;
        }
        let now = clock::now_ns();
        for r in raw.drain(..) {
            let kernel_ts_ns = r.kernel_ts_ns.filter(|_| !self.own_clock_arrivals);
            self.kernel_timestamped += kernel_ts_ns.is_some() as u64;
            match Packet::parse(r.id, kernel_ts_ns.unwrap_or(now), r.data) {
                Ok(p) => {
                    self.held.insert(p.id);
                    self.link.arrive(p);
                }
                // Not IPv4 (the rules only queue IPv4): nothing to emulate, let it pass.
                Err(_) => self.queue.accept(r.id)?,
            }
        }
        Ok(())
    }

    /// When the loop has its next thing to do: the next stats line, the link's next event or the schedule's next
    /// step (reports wait for a wake-up that happens anyway); u64::MAX: nothing but packets and signals.
    fn next_wake_ns(&self, next_stats: u64) -> u64 {
        let mut next = u64::MAX;
        if self.stats.is_some() {
            next = next.min(next_stats);
        }
        if let Some(t) = self.link.next_event_ns() {
            next = next.min(t);
        }
        // A step's time wakes the loop, so that it is recorded when it comes into force, not at the next packet.
        if let Some(t) = self.schedule.as_ref().and_then(|(s, _)| s.next_ns()) {
            next = next.min(t);
        }
        next
    }

    /// The time 0 a SIGUSR1 that arrived at `arrived_ns` asks for: --t0-file's (a read of a few bytes, once per
    /// restart), never before the arrival.
    fn requested_time_zero(&self, arrived_ns: u64) -> u64 {
        let Some(path) = &self.t0_file else { return arrived_ns };
        let asked = std::fs::read_to_string(path).map_err(|e| e.to_string()).and_then(|text| {
            text.trim().parse::<u64>().map_err(|e| format!("{:?} is not a time in ns ({e})", text.trim()))
        });
        match asked {
            Ok(t0_ns) => restart_time_zero(Some(t0_ns), arrived_ns),
            Err(why) => {
                eprintln!("rtclab-bottleneck: --t0-file {}: {why}; time 0 is the signal's arrival", path.display());
                arrived_ns
            }
        }
    }

    /// Reads --flow-delays-file and puts its table in force; says so on stdout (the harness waits for that line).
    /// A table that cannot be read leaves the one in force and says why on stderr.
    fn reload_flow_delays(&mut self) -> io::Result<()> {
        let Some(path) = &self.flow_delays_file else {
            eprintln!("rtclab-bottleneck: SIGUSR2 without --flow-delays-file: nothing to read");
            return Ok(());
        };
        match std::fs::read_to_string(path).map_err(|e| e.to_string()).and_then(|t| crate::flow_delay::parse(&t)) {
            Ok(table) => {
                let generation = table.generation;
                self.link.set_flow_delays(table);
                let mut out = io::stdout();
                writeln!(out, "flow delays {generation} in force")?;
                out.flush()
            }
            Err(why) => {
                eprintln!(
                    "rtclab-bottleneck: --flow-delays-file {}: {why}; the flow delays in force stay",
                    path.display()
                );
                Ok(())
            }
        }
    }

    fn give_drop_verdicts(&mut self) -> io::Result<()> {
        let mut drops = std::mem::take(&mut self.drops);
        drops.extend(self.link.take_drops());
        let result = drops.iter().try_for_each(|o| {
            let release_ns = clock::now_ns();
            self.queue.drop_packet(o.packet.id)?;
            self.held.remove(&o.packet.id);
            self.log.write_packet(&o.packet, o.event, release_ns);
            Ok(())
        });
        drops.clear();
        self.drops = drops;
        result
    }

    fn release_due(&mut self, now: u64) -> io::Result<()> {
        let mut due = std::mem::take(&mut self.due);
        while let Some(o) = self.link.pop_due(now) {
            due.push(o);
        }
        let result = self.forward(&mut due);
        due.clear();
        self.due = due;
        result
    }

    /// Accept verdicts for forwarded packets: one batch message when they are exactly the oldest the kernel holds.
    fn forward(&mut self, due: &mut [Outcome]) -> io::Result<()> {
        if due.is_empty() {
            return Ok(());
        }
        // The verdict call itself re-injects the packet (it reaches b inside the call): time it before.
        let release_ns = clock::now_ns();
        // Packets marked CE go back rewritten, one by one; the rest ("plain") are accepted as they are.
        self.plain_ids.clear();
        for o in due.iter_mut() {
            if o.packet.apply_ce_to_data() {
                self.queue.accept_modified(o.packet.id, &o.packet.data)?;
                self.held.remove(&o.packet.id);
            } else {
                self.plain_ids.push(o.packet.id);
            }
        }
        self.plain_ids.sort_unstable();
        let span_ok = match (self.held.first(), self.held.last()) {
            (Some(&lo), Some(&hi)) => hi - lo < (1 << 31),
            _ => false,
        };
        let n = self.plain_ids.len();
        if span_ok && n > 1 && self.held.iter().take(n).eq(self.plain_ids.iter()) {
            self.queue.accept_up_to(self.plain_ids[n - 1])?;
        } else {
            for &id in &self.plain_ids {
                self.queue.accept(id)?;
            }
        }
        for id in &self.plain_ids {
            self.held.remove(id);
        }
        for o in due.iter() {
            self.log.write_packet(&o.packet, o.event, release_ns);
            self.lateness.count(release_ns, o.packet.due_ns);
        }
        Ok(())
    }

    fn write_actions(&mut self) {
        match self.actions.as_mut() {
            Some(a) => self.link.take_meter_records().for_each(|r| a.write(r)),
            None => self.link.take_meter_records().for_each(drop),
        }
    }

    /// Records the steps that came into force by `now` (the schedule log).
    fn record_steps(&mut self, now: u64) {
        if let Some((steps, log)) = self.schedule.as_mut() {
            steps.take_in_force(now, |r| log.write(r));
        }
    }

    fn write_stats(&mut self, now: u64) {
        let sample = Sample {
            t_ns: now,
            queue_packets: self.link.queue_packets(),
            queue_bytes: self.link.queue_bytes(),
            counters: self.link.counters,
            rate_kbit: self.link.rate_kbit_at(now),
            kernel_overruns: self.kernel_overruns,
            kernel_timestamped: self.kernel_timestamped,
            log_records_lost: self.log.lost(),
            lateness: self.lateness,
            dualpi2: self.link.coupled_state(),
        };
        if let Some(s) = self.stats.as_mut() {
            s.write(sample);
        }
    }

    /// Says on stderr what went wrong since the last report (rare: each is a failure of the run's conditions),
    /// and stops on a writer's error.
    fn report(&mut self) -> io::Result<()> {
        if self.kernel_overruns > self.overruns_reported {
            eprintln!("rtclab-bottleneck: the kernel dropped packets because the NFQUEUE socket buffer overflowed ({} overrun reports so far).", self.kernel_overruns);
            self.overruns_reported = self.kernel_overruns;
        }
        let lost = self.log.lost();
        if lost > self.log_lost_reported {
            eprintln!("rtclab-bottleneck: the ground-truth log lost {lost} records so far: its writer thread fell a whole ring behind (disk or CPU starved).");
            self.log_lost_reported = lost;
        }
        self.log.check()?;
        if let Some(s) = self.stats.as_mut() {
            s.check()?;
        }
        if let Some(a) = self.actions.as_mut() {
            if a.lost() > self.actions_lost_reported {
                eprintln!("rtclab-bottleneck: the action log lost {} records so far: its writer thread fell a whole ring behind.", a.lost());
                self.actions_lost_reported = a.lost();
            }
            a.check()?;
        }
        if let Some((_, log)) = self.schedule.as_mut() {
            if log.lost() > self.schedule_lost_reported {
                eprintln!("rtclab-bottleneck: the schedule log lost {} records so far: its writer thread fell a whole ring behind.", log.lost());
                self.schedule_lost_reported = log.lost();
            }
            log.check()?;
        }
        Ok(())
    }

    /// Releases everything held: accept what is due, drop the rest (event 5); then flush.
    fn shutdown(&mut self) -> io::Result<()> {
        let now = clock::now_ns();
        self.link.advance(now);
        let outcomes = self.link.shutdown(now);
        let (mut forwarded, dropped): (Vec<Outcome>, Vec<Outcome>) =
            outcomes.into_iter().partition(|o| matches!(o.event, Event::Forwarded | Event::ForwardedCe));
        self.forward(&mut forwarded)?;
        for o in dropped {
            let release_ns = clock::now_ns();
            self.queue.drop_packet(o.packet.id)?;
            self.held.remove(&o.packet.id);
            self.log.write_packet(&o.packet, o.event, release_ns);
        }
        self.write_actions();
        self.write_stats(clock::now_ns());
        self.report()?;
        if let Some(a) = self.actions.as_mut() {
            a.close()?;
        }
        if let Some((_, log)) = self.schedule.as_mut() {
            log.close()?;
        }
        if let Some(s) = self.stats.as_mut() {
            s.close()?;
            if s.lost() > 0 {
                eprintln!(
                    "rtclab-bottleneck: the stats file lost {} samples: its writer thread fell a whole ring behind.",
                    s.lost()
                );
            }
        }
        self.log.close()
    }
}

/// How long the loop has spun in the current window (see SPIN_BUDGET_NS).
struct SpinBudget {
    window_start: u64,
    spun_ns: u64,
}

/// Waits for the next thing to do at `next` (ns), a packet or a signal: spinning (yielding to the other direction's
/// bottleneck) when `next` is within SPIN_NS and the window's budget allows, else sleeping on the timer.
fn wait_until(waiter: &mut Waiter, next: u64, spin: &mut SpinBudget) -> io::Result<clock::Woken> {
    let now = clock::now_ns();
    if now - spin.window_start > SPIN_WINDOW_NS {
        spin.window_start = now;
        spin.spun_ns = 0;
    }
    let may_spin = spin.spun_ns < SPIN_BUDGET_NS;
    if next <= now {
        return waiter.wait(0);
    }
    if next - now <= SPIN_NS && may_spin {
        loop {
            // Lets another real-time task of our priority (the other direction's bottleneck) run.
            unsafe { libc::sched_yield() };
            let w = waiter.wait(0)?;
            let t = clock::now_ns();
            if w.signalled || w.restart_schedule || w.reload_flow_delays || w.packets || t >= next {
                spin.spun_ns += t - now;
                return Ok(w);
            }
        }
    }
    waiter.arm(if next == u64::MAX {
        0
    } else if may_spin {
        next - SPIN_NS
    } else {
        next
    })?;
    waiter.wait(-1)
}

/// Time 0 of a restart: the requested time, or the signal's arrival when the request came too late (a step due before
/// the restart cannot have been in force before it).
pub fn restart_time_zero(requested_ns: Option<u64>, arrived_ns: u64) -> u64 {
    requested_ns.map_or(arrived_ns, |t0| t0.max(arrived_ns))
}

#[cfg(test)]
mod time_zero_tests {
    use super::restart_time_zero;

    #[test]
    fn a_restart_takes_the_requested_time_zero_unless_it_arrived_after_it() {
        assert_eq!(restart_time_zero(Some(5_000), 1_000), 5_000); // ahead of its time 0: exactly on it
        assert_eq!(restart_time_zero(Some(5_000), 7_000), 7_000); // late: from its arrival
        assert_eq!(restart_time_zero(None, 7_000), 7_000); // nothing asked: its arrival
    }
}
