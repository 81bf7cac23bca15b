//! rtclab-bottleneck: the userspace bottleneck of rtclab. Binds an NFQUEUE queue, holds each packet for as long
//! as the emulated link (delay, rate, queue discipline) says, and writes a per-packet ground-truth log.
//! See docs/bottleneck.md.

mod actions;
mod check;
mod clock;
mod config;
mod flow_delay;
mod gtlog;
mod lateness;
mod link;
mod loss;
mod meter;
mod nfq;
mod packet;
mod qdisc;
mod rate;
mod realtime;
mod ring;
mod runtime;
mod stats;
mod steps;
mod writer;

#[cfg(test)]
mod meter_tests;
#[cfg(test)]
mod sim_tests;

use clap::Parser;
use rand::rngs::SmallRng;
use rand::SeedableRng;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// Emulates one direction of a bottleneck link on NFQUEUE packets (run inside the router namespace).
#[derive(Parser, Debug)]
#[command(name = "rtclab-bottleneck", version)]
struct Args {
    /// NFQUEUE queue number to bind.
    #[arg(long)]
    queue_num: Option<u16>,
    /// The link as JSON: the normalised link netem writes (docs/bottleneck.md); every field is required.
    #[arg(long)]
    config: PathBuf,
    /// Ground-truth log to write (docs/bottleneck-log.md).
    #[arg(long)]
    log: Option<PathBuf>,
    /// Periodic counters as JSON lines.
    #[arg(long)]
    stats: Option<PathBuf>,
    /// The meters' action log (JSON lines, docs/bottleneck-log.md); required when the link has meters.
    #[arg(long)]
    actions: Option<PathBuf>,
    /// The schedule log (JSON lines, docs/bottleneck-log.md): when each capacity and delay step came into force.
    #[arg(long)]
    schedule: Option<PathBuf>,
    #[arg(long, default_value_t = 100)]
    stats_interval_ms: u64,
    /// t = 0 of rate schedules and traces (CLOCK_REALTIME ns); default: when the program starts.
    #[arg(long)]
    t0_ns: Option<u64>,
    /// Where the next time 0 is written (CLOCK_REALTIME ns, one integer) before SIGUSR1 restarts the schedules: time 0
    /// becomes that time, or the signal's arrival when it comes later, so that a restart sent ahead of its time 0 is
    /// on time however late the sender's timer would have fired. Without it (or when the file cannot be read: said
    /// on stderr), time 0 is the signal's arrival.
    #[arg(long)]
    t0_file: Option<PathBuf>,
    /// Where the flows with a propagation delay of their own are written (JSON, docs/bottleneck.md "Delay per flow")
    /// before SIGUSR2 asks for them to be read; once in force, `flow delays GENERATION in force` on stdout.
    #[arg(long)]
    flow_delays_file: Option<PathBuf>,
    /// Direction named in the log header; default: "forward"/"reverse" from the log's file name.
    #[arg(long)]
    direction: Option<String>,
    /// Seed of the random loss, jitter and AQM decisions (default: from the OS).
    #[arg(long)]
    seed: Option<u64>,
    /// Only check the config (exit 0 if valid, 2 if not); needs no queue and no root.
    #[arg(long)]
    check: bool,
    /// Print the config as read, in the normalised form (one line of JSON), and exit 0 (2 if invalid); needs no
    /// queue and no root. The conformance test compares it with netem's normaliser.
    #[arg(long, conflicts_with = "check")]
    print_config: bool,
    /// Take each packet's arrival from this process's clock when it reads the packet, not from the kernel's
    /// timestamp: for a hop of a chain of bottlenecks, where the kernel's timestamp is the packet's arrival in the
    /// router, before the hops ahead of this one (docs/netem.md, "A chain of bottlenecks").
    #[arg(long)]
    own_clock_arrivals: bool,
    /// Do not ask for SCHED_FIFO and locked memory.
    #[arg(long)]
    no_realtime: bool,
    /// Do not hold /dev/cpu_dma_latency at 0 while running.
    #[arg(long)]
    no_dma_latency: bool,
}

fn fail(code: u8, msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("rtclab-bottleneck: {msg}");
    ExitCode::from(code)
}

fn main() -> ExitCode {
    if let Err(e) = clock::block_termination_signals() {
        return fail(1, format!("cannot block SIGTERM/SIGINT: {e}."));
    }
    let args = Args::parse();
    let text = match std::fs::read_to_string(&args.config) {
        Ok(t) => t,
        Err(e) => return fail(2, format!("cannot read the link config {}: {e}.", args.config.display())),
    };
    let json: serde_json::Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(e) => return fail(2, format!("the link config {} is not valid JSON: {e}.", args.config.display())),
    };
    let read_trace = |p: &str| std::fs::read_to_string(p).map_err(|e| e.to_string());
    let cfg = match config::parse_link(&json, &read_trace) {
        Ok(c) => c,
        Err(e) => return fail(2, format!("{e}.")),
    };
    if args.check {
        return ExitCode::SUCCESS;
    }
    if args.print_config {
        println!("{}", cfg.to_json());
        return ExitCode::SUCCESS;
    }
    let (Some(queue_num), Some(log_path)) = (args.queue_num, args.log.clone()) else {
        return fail(2, "--queue-num and --log are required (unless --check or --print-config).");
    };
    if cfg.has_meters() && args.actions.is_none() {
        return fail(2, "the link has meters: --actions (their action log) is required.");
    }
    if args.stats_interval_ms == 0 {
        return fail(2, "--stats-interval-ms must be > 0.");
    }
    let direction = args.direction.clone().unwrap_or_else(|| {
        let name = log_path.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default();
        if name.contains("reverse") {
            "reverse"
        } else if name.contains("forward") {
            "forward"
        } else {
            "unknown"
        }
        .to_string()
    });
    match run(&args, queue_num, &log_path, &direction, &cfg, &json) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(1, format!("{e}.")),
    }
}

fn run(
    args: &Args,
    queue_num: u16,
    log_path: &std::path::Path,
    direction: &str,
    cfg: &config::LinkConfig,
    json: &serde_json::Value,
) -> std::io::Result<()> {
    let now = clock::now_ns();
    let t0_ns = args.t0_ns.unwrap_or(now);
    let rng = match args.seed {
        Some(s) => SmallRng::seed_from_u64(s),
        None => SmallRng::from_entropy(),
    };
    let log = gtlog::create(log_path, direction, json)
        .map_err(|e| std::io::Error::new(e.kind(), format!("cannot create the log {}: {e}", log_path.display())))?;
    let stats = match &args.stats {
        Some(p) => Some(stats::StatsWriter::create(p).map_err(|e| {
            std::io::Error::new(e.kind(), format!("cannot create the stats file {}: {e}", p.display()))
        })?),
        None => None,
    };
    let actions = match &args.actions {
        Some(p) => Some(actions::ActionLog::create(p).map_err(|e| {
            std::io::Error::new(e.kind(), format!("cannot create the action log {}: {e}", p.display()))
        })?),
        None => None,
    };
    let schedule = match &args.schedule {
        Some(p) => Some(steps::ScheduleLog::create(p).map_err(|e| {
            std::io::Error::new(e.kind(), format!("cannot create the schedule log {}: {e}", p.display()))
        })?),
        None => None,
    };
    let link = link::Link::new(cfg, t0_ns, now, rng);
    let schedule_steps = steps::ScheduleSteps::new(cfg, t0_ns);

    // Room in the kernel queue for the discipline's limit plus what sits in the delay line (a bandwidth-delay
    // product counted in 64-byte packets; 100k packets/s when the rate is unlimited).
    let held_s = (cfg.delay_ms + cfg.jitter_ms) / 1000.0 + 1.0;
    let packets_per_s = cfg.rate.first_bits_per_s().map_or(100_000.0, |bps| bps as f64 / (64.0 * 8.0));
    let maxlen = (cfg.qdisc.max_packets() as f64 + packets_per_s * held_s + 1024.0).clamp(4096.0, 4_000_000.0) as u32;
    let queue = nfq::Queue::open(queue_num, maxlen, 32 << 20)?;

    let (_dma, notes) = realtime::tune_for_latency(!args.no_realtime, !args.no_dma_latency);
    for n in notes {
        eprintln!("rtclab-bottleneck: note: {n} (timing may be less precise).");
    }
    let mut out = std::io::stdout();
    writeln!(out, "ready")?;
    out.flush()?;

    let mut rt = runtime::Runtime::new(queue, link, log, stats, args.stats_interval_ms * 1_000_000, actions);
    rt.schedule = schedule.map(|log| (schedule_steps, log));
    rt.t0_file = args.t0_file.clone();
    rt.flow_delays_file = args.flow_delays_file.clone();
    rt.own_clock_arrivals = args.own_clock_arrivals;
    rt.run()
}
