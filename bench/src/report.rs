//! What the benchmark binaries print with: latencies and their quantiles, a process's memory,
//! and one row of the table.

use std::time::{Duration, Instant};

/// Latencies of a run of calls.
pub struct Run(pub Vec<Duration>);

impl Run {
    /// Times `n` calls of `f`, one after another.
    pub fn time(n: usize, mut f: impl FnMut(usize)) -> Run {
        Run((0..n)
            .map(|i| {
                let t = Instant::now();
                f(i);
                t.elapsed()
            })
            .collect())
    }

    /// The latency below which a share `q` of the calls answered.
    pub fn quantile(&self, q: f64) -> Duration {
        let mut sorted = self.0.clone();
        sorted.sort();
        sorted[((sorted.len() - 1) as f64 * q).round() as usize]
    }

    /// Calls a second, one at a time.
    pub fn per_second(&self) -> f64 {
        self.0.len() as f64 / self.0.iter().sum::<Duration>().as_secs_f64()
    }
}

/// (resident, peak resident) memory of process `pid` in MiB, from /proc.
pub fn memory_mib(pid: u32) -> (f64, f64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
            .unwrap_or(0.0)
            / 1024.0
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// A duration in milliseconds, as the tables show it.
pub fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1e3)
}

/// One row of the table.
#[allow(clippy::print_stdout)]
pub fn row(what: &str, figure: String, note: String) {
    println!("| {what} | {figure} | {note} |");
}
