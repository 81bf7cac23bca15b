//! The link's loss models beside independent random loss (`loss_percent`), each decided when a packet reaches the
//! bottleneck, before the queue, and logged as its own drop event (docs/bottleneck-log.md):
//! - `outage`: on/off periods of exponentially distributed lengths, as Cellsim's: a packet that arrives while the
//!   link is off is lost (event 6). The periods run on the link's clock whether packets come or not.
//! - `loss_gemodel`: netem's Gilbert-Elliott model (`loss gemodel p r 1-h 1-k`, sch_netem.c `loss_gilb_ell`): a
//!   two-state Markov chain stepped once per packet, each state losing packets with its own probability (event 7).
//!
//! Each model has its own generator, seeded from the link's at start, so that one model's draws never shift
//! another's (a seeded run is the same with or without jitter, say).

use crate::check::{check_number, ConfigError};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

/// `outage`: the mean lengths of the on and off periods.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct OutageConfig {
    pub mean_on_ms: f64,
    pub mean_off_ms: f64,
}

impl OutageConfig {
    pub fn validate(&self, path: &str) -> Result<(), ConfigError> {
        check_number(path, "mean_on_ms", self.mean_on_ms, 0.0, 1e7, true)?;
        check_number(path, "mean_off_ms", self.mean_off_ms, 0.0, 1e7, true)
    }
}

/// `loss_gemodel`: netem's four parameters, in percent as tc takes them. `bad_loss_percent` is tc's `1-h` and
/// `good_loss_percent` its `1-k`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct GeModelConfig {
    /// Good -> bad, per packet.
    pub p_percent: f64,
    /// Bad -> good, per packet.
    pub r_percent: f64,
    pub bad_loss_percent: f64,
    pub good_loss_percent: f64,
}

impl GeModelConfig {
    pub fn validate(&self, path: &str) -> Result<(), ConfigError> {
        check_number(path, "p_percent", self.p_percent, 0.0, 100.0, false)?;
        check_number(path, "r_percent", self.r_percent, 0.0, 100.0, false)?;
        check_number(path, "bad_loss_percent", self.bad_loss_percent, 0.0, 100.0, false)?;
        check_number(path, "good_loss_percent", self.good_loss_percent, 0.0, 100.0, false)
    }
}

/// An exponentially distributed length with this mean (inversion: -mean ln U, U in (0, 1]).
fn exponential_ns(mean_ns: f64, rng: &mut SmallRng) -> u64 {
    let u = 1.0 - rng.gen::<f64>();
    (-mean_ns * u.ln()).round() as u64
}

/// The on/off process. It starts on at the link's start; from then on, periods alternate, each drawn when the
/// one before it ends.
pub struct Outages {
    mean_on_ns: f64,
    mean_off_ns: f64,
    off: bool,
    /// End of the current period.
    period_end_ns: u64,
    rng: SmallRng,
}

impl Outages {
    pub fn new(cfg: &OutageConfig, now_ns: u64, seed_from: &mut SmallRng) -> Outages {
        let mut rng = SmallRng::seed_from_u64(seed_from.gen());
        let mean_on_ns = cfg.mean_on_ms * 1e6;
        let period_end_ns = now_ns + exponential_ns(mean_on_ns, &mut rng);
        Outages { mean_on_ns, mean_off_ns: cfg.mean_off_ms * 1e6, off: false, period_end_ns, rng }
    }

    /// Whether the link is off at `t_ns` (times never decrease).
    pub fn off_at(&mut self, t_ns: u64) -> bool {
        while self.period_end_ns <= t_ns {
            self.off = !self.off;
            let mean = if self.off { self.mean_off_ns } else { self.mean_on_ns };
            self.period_end_ns += exponential_ns(mean, &mut self.rng);
        }
        self.off
    }
}

/// The Gilbert-Elliott chain, in netem's order: a packet is lost with the loss probability of the state it finds,
/// and the chain steps (good -> bad with p, bad -> good with r) as it passes. It starts in the good state.
pub struct GilbertElliott {
    p: f64,
    r: f64,
    bad_loss: f64,
    good_loss: f64,
    bad: bool,
    rng: SmallRng,
}

impl GilbertElliott {
    pub fn new(cfg: &GeModelConfig, seed_from: &mut SmallRng) -> GilbertElliott {
        GilbertElliott {
            p: cfg.p_percent / 100.0,
            r: cfg.r_percent / 100.0,
            bad_loss: cfg.bad_loss_percent / 100.0,
            good_loss: cfg.good_loss_percent / 100.0,
            bad: false,
            rng: SmallRng::seed_from_u64(seed_from.gen()),
        }
    }

    /// Whether the next packet is lost.
    pub fn lose(&mut self) -> bool {
        let (step, loss) = if self.bad { (self.r, self.bad_loss) } else { (self.p, self.good_loss) };
        if self.rng.gen::<f64>() < step {
            self.bad = !self.bad;
        }
        self.rng.gen::<f64>() < loss
    }
}

#[cfg(test)]
mod tests {
    //! Each model against its closed forms, on long seeded runs, within 5 standard errors of the estimate (the
    //! standard errors from the model and the sample size, not from the run).
    use super::*;

    fn ge(p: f64, r: f64, bad_loss: f64, good_loss: f64, seed: u64) -> GilbertElliott {
        let cfg = GeModelConfig {
            p_percent: p * 100.0,
            r_percent: r * 100.0,
            bad_loss_percent: bad_loss * 100.0,
            good_loss_percent: good_loss * 100.0,
        };
        GilbertElliott::new(&cfg, &mut SmallRng::seed_from_u64(seed))
    }

    /// The closed forms of a stationary Gilbert-Elliott chain with losses l_G, l_B.
    struct GeTheory {
        loss: f64,
        /// Asymptotic variance of the loss indicator's sample mean, times n.
        loss_var: f64,
        /// Mean length of a run of consecutive losses.
        burst: f64,
    }

    fn ge_theory(p: f64, r: f64, lb: f64, lg: f64) -> GeTheory {
        let pi_b = p / (p + r);
        let pi_g = 1.0 - pi_b;
        let loss = pi_g * lg + pi_b * lb;
        // The chain's second eigenvalue: Cov(L_0, L_k) = (lB - lG)^2 pi_G pi_B lambda^k for k >= 1, as losses are
        // independent given the states.
        let lambda = 1.0 - p - r;
        let loss_var = loss * (1.0 - loss) + 2.0 * (lb - lg).powi(2) * pi_g * pi_b * lambda / (1.0 - lambda);
        // P(L_n, L_n+1): a loss in state s, then the chain steps, then a loss in the next state.
        let both = pi_g * lg * ((1.0 - p) * lg + p * lb) + pi_b * lb * (r * lg + (1.0 - r) * lb);
        // One burst ends at each loss followed by a packet that passes: burst = P(L) / P(L, not L next).
        GeTheory { loss, loss_var, burst: loss / (loss - both) }
    }

    /// (loss share, mean burst length, number of bursts, sample variance of the burst lengths) over n packets.
    fn run(g: &mut GilbertElliott, n: usize) -> (f64, f64, f64, f64) {
        let (mut lost, mut bursts, mut run) = (0usize, Vec::new(), 0usize);
        for _ in 0..n {
            if g.lose() {
                lost += 1;
                run += 1;
            } else if run > 0 {
                bursts.push(run as f64);
                run = 0;
            }
        }
        let m = bursts.iter().sum::<f64>() / bursts.len() as f64;
        let var = bursts.iter().map(|b| (b - m).powi(2)).sum::<f64>() / (bursts.len() - 1) as f64;
        (lost as f64 / n as f64, m, bursts.len() as f64, var)
    }

    fn check_ge(p: f64, r: f64, lb: f64, lg: f64, seed: u64) {
        let n = 2_000_000;
        let t = ge_theory(p, r, lb, lg);
        let (loss, burst, nb, burst_var) = run(&mut ge(p, r, lb, lg, seed), n);
        let se_loss = (t.loss_var / n as f64).sqrt();
        assert!((loss - t.loss).abs() < 5.0 * se_loss, "p {p} r {r}: loss {loss}, model {} +- {se_loss}", t.loss);
        // Burst lengths: the standard error of a mean of nb of them (their spread is the sample's).
        let se_burst = (burst_var / nb).sqrt();
        assert!(
            (burst - t.burst).abs() < 5.0 * se_burst,
            "p {p} r {r}: burst {burst}, model {} +- {se_burst}",
            t.burst
        );
    }

    #[test]
    fn gilbert_elliott_matches_its_stationary_loss_and_mean_burst_length() {
        // Simple Gilbert (1-h = 1, 1-k = 0): the bad state loses everything, bursts are its stays, mean 1/r.
        check_ge(0.01, 0.3, 1.0, 0.0, 1);
        assert!((ge_theory(0.01, 0.3, 1.0, 0.0).burst - 1.0 / 0.3).abs() < 1e-12);
        // Gilbert (1-h < 1) and the full Gilbert-Elliott (1-k > 0).
        check_ge(0.02, 0.25, 0.7, 0.0, 2);
        check_ge(0.05, 0.2, 0.8, 0.01, 3);
    }

    #[test]
    fn gilbert_elliott_with_only_p_is_bernoulli() {
        // netem's defaults for `loss gemodel p` (tc-netem(8)): r = 1 - p, 1-h = 1, 1-k = 0: each packet is lost
        // with probability p, independently (mean burst 1 / (1 - p)).
        let p = 0.1;
        let t = ge_theory(p, 1.0 - p, 1.0, 0.0);
        assert!((t.loss - p).abs() < 1e-12 && (t.burst - 1.0 / (1.0 - p)).abs() < 1e-12);
        assert!((t.loss_var - p * (1.0 - p)).abs() < 1e-12, "no correlation between packets");
        check_ge(p, 1.0 - p, 1.0, 0.0, 4);
    }

    #[test]
    fn gilbert_elliott_starts_good_and_follows_its_extremes() {
        let mut never = ge(0.0, 1.0, 1.0, 0.0, 5);
        assert!((0..10_000).all(|_| !never.lose()), "p = 0: the good state never ends");
        let mut stuck = ge(1.0, 0.0, 1.0, 0.0, 6);
        assert!(!stuck.lose(), "the first packet finds the good state");
        assert!((0..10_000).all(|_| stuck.lose()), "r = 0: the bad state never ends");
    }

    /// (on, off) period lengths in ns over the first `cycles` cycles, walked with `off_at`.
    fn periods(o: &mut Outages, cycles: usize) -> (Vec<f64>, Vec<f64>) {
        let (mut on, mut off) = (Vec::new(), Vec::new());
        let mut start = 0;
        while off.len() < cycles {
            let end = o.period_end_ns;
            let list = if o.off { &mut off } else { &mut on };
            list.push((end - start) as f64);
            start = end;
            o.off_at(end);
        }
        (on, off)
    }

    #[test]
    fn outages_match_their_off_fraction_and_mean_off_length() {
        let (a, b) = (2000.0, 300.0); // mean on, mean off, ms
        let mut o = Outages::new(&OutageConfig { mean_on_ms: a, mean_off_ms: b }, 0, &mut SmallRng::seed_from_u64(11));
        let n = 100_000;
        let (on, off) = periods(&mut o, n);
        let (total_on, total_off) = (on[..n].iter().sum::<f64>() / 1e6, off.iter().sum::<f64>() / 1e6);
        let fraction = total_off / (total_on + total_off);
        // f = B / (A + B) of the means A ~ a, B ~ b over n cycles; exponential lengths have sd = mean, so by the
        // delta method Var(f) = 2 a^2 b^2 / ((a + b)^4 n).
        let want = b / (a + b);
        let se = (2.0 * a * a * b * b / ((a + b).powi(4) * n as f64)).sqrt();
        assert!((fraction - want).abs() < 5.0 * se, "off fraction {fraction}, model {want} +- {se}");
        let mean_off = total_off / n as f64;
        let se_off = b / (n as f64).sqrt();
        assert!((mean_off - b).abs() < 5.0 * se_off, "mean off {mean_off} ms, model {b} +- {se_off}");
        let mean_on = total_on / n as f64;
        assert!((mean_on - a).abs() < 5.0 * a / (n as f64).sqrt(), "mean on {mean_on} ms");
    }

    #[test]
    fn outages_start_on_and_answer_for_any_later_time() {
        let mut o =
            Outages::new(&OutageConfig { mean_on_ms: 50.0, mean_off_ms: 50.0 }, 1000, &mut SmallRng::seed_from_u64(3));
        let first_end = o.period_end_ns;
        assert!(first_end >= 1000);
        assert!(!o.off_at(1000) && !o.off_at(first_end - 1), "on until the first period ends");
        assert!(o.off_at(first_end), "then off");
        // A time far ahead walks every period in between.
        let later = o.off_at(3_600_000_000_000);
        assert!(o.period_end_ns > 3_600_000_000_000);
        assert_eq!(later, o.off);
    }
}
