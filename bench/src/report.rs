//! What the benchmark binaries print with: latencies and their quantiles, a process's memory,
//! and one row of the table.

use std::time::{Duration, Instant};

/// Latencies of a run of calls.
pub struct Run(pub Vec<Duration>);

/// Calls a lane makes in one turn of [`Run::in_turns`].
pub const TURN: usize = 20;

impl Run {
    /// Times `n` calls of `f`, one after another.
    pub fn time(n: usize, mut f: impl FnMut(usize)) -> Run {
        let mut runs = Run::in_turns(&mut [()], n, |(), i| f(i));
        runs.pop().expect("one lane, one run")
    }

    /// Times `n` calls of `call` on each of `lanes` (the servers compared), taking turns of
    /// [`TURN`] calls, one call at a time in all; returns a run per lane, in their order.
    ///
    /// Why turns: this machine's speed drifts over minutes (SQLite's write p50 moved between
    /// 0.47 and 0.80 ms in one afternoon), so timing one server's calls and then another's
    /// compared one minute with the next, and a ratio of the two moved by a third between
    /// runs. Taking turns, every lane meets the same moments. Each lane still makes its
    /// calls `0..n` in order.
    pub fn in_turns<L>(lanes: &mut [L], n: usize, mut call: impl FnMut(&mut L, usize)) -> Vec<Run> {
        let mut runs: Vec<Vec<Duration>> = lanes.iter().map(|_| Vec::with_capacity(n)).collect();
        for start in (0..n).step_by(TURN) {
            for (lane, run) in lanes.iter_mut().zip(&mut runs) {
                for i in start..n.min(start + TURN) {
                    let t = Instant::now();
                    call(lane, i);
                    run.push(t.elapsed());
                }
            }
        }
        runs.into_iter().map(Run).collect()
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

/// Sizes from process `pid`'s /proc status, in MiB, by field name (0 for one not there).
fn status_mib<const N: usize>(pid: u32, names: [&str; N]) -> [f64; N] {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    names.map(|name| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
            .unwrap_or(0.0)
            / 1024.0
    })
}

/// (resident, peak resident) memory of process `pid` in MiB, from /proc.
pub fn memory_mib(pid: u32) -> (f64, f64) {
    let [resident, peak] = status_mib(pid, ["VmRSS:", "VmHWM:"]);
    (resident, peak)
}

/// The part of process `pid`'s resident memory that is its own (`RssAnon`), in MiB: the
/// rest is pages of files it maps (its binary, the compiled component), shared with the
/// page cache.
pub fn anonymous_mib(pid: u32) -> f64 {
    status_mib(pid, ["RssAnon:"])[0]
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lanes_take_turns_and_each_keeps_its_order() {
        let mut made = Vec::new();
        let n = 2 * TURN + 5;
        let runs = Run::in_turns(&mut ['a', 'b'], n, |lane, i| made.push((*lane, i)));
        assert!(runs.iter().all(|run| run.0.len() == n));
        let turn = |lane, calls: std::ops::Range<usize>| calls.map(move |i| (lane, i));
        let expected: Vec<(char, usize)> = turn('a', 0..TURN)
            .chain(turn('b', 0..TURN))
            .chain(turn('a', TURN..2 * TURN))
            .chain(turn('b', TURN..2 * TURN))
            .chain(turn('a', 2 * TURN..n))
            .chain(turn('b', 2 * TURN..n))
            .collect();
        assert_eq!(made, expected);
    }

    #[test]
    fn one_lane_is_timed_call_after_call() {
        let mut made = Vec::new();
        assert_eq!(Run::time(3, |i| made.push(i)).0.len(), 3);
        assert_eq!(made, [0, 1, 2]);
    }
}
