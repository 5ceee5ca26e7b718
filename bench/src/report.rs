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
    ///
    /// The lane that goes first moves round by one each round: where a lane's turn falls
    /// matters too. With a fixed order, two builds of equal CPU a write read 1.35-1.43x the
    /// write p50 in the first lane against the last, whichever build was first (the first
    /// lane's syncs came right after the last one's); in rotation, 1.04x and 1.00x.
    pub fn in_turns<L>(lanes: &mut [L], n: usize, mut call: impl FnMut(&mut L, usize)) -> Vec<Run> {
        let mut runs: Vec<Vec<Duration>> = lanes.iter().map(|_| Vec::with_capacity(n)).collect();
        for (round, start) in (0..n).step_by(TURN).enumerate() {
            let first = round % lanes.len().max(1);
            let order = (first..lanes.len()).chain(0..first);
            for at in order {
                let (lane, run) = (&mut lanes[at], &mut runs[at]);
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

/// CPU time process `pid` has used so far, user and system, in every thread (those that
/// ended included): the kernel's clock of the process, to the nanosecond (where /proc
/// counts in ticks of 10 ms). Zero for a process gone.
#[allow(unsafe_code)] // The process's CPU clock has no safe wrapper in std.
pub fn cpu_time(pid: u32) -> Duration {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return Duration::ZERO;
    };
    let mut clock: libc::clockid_t = 0;
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: both out-pointers are valid for the calls; a pid that is gone is an error code.
    let read = unsafe {
        libc::clock_getcpuclockid(pid, &mut clock) == 0 && libc::clock_gettime(clock, &mut now) == 0
    };
    match (read, u64::try_from(now.tv_sec), u32::try_from(now.tv_nsec)) {
        (true, Ok(secs), Ok(nanos)) => Duration::new(secs, nanos),
        _ => Duration::ZERO,
    }
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

    /// Each lane makes its calls in order, a turn at a time, and the lane that goes first
    /// moves round: a, b in the first round, b, a in the second.
    #[test]
    fn lanes_take_turns_and_each_keeps_its_order() {
        let mut made = Vec::new();
        let n = 2 * TURN + 5;
        let runs = Run::in_turns(&mut ['a', 'b'], n, |lane, i| made.push((*lane, i)));
        assert!(runs.iter().all(|run| run.0.len() == n));
        let turn = |lane, calls: std::ops::Range<usize>| calls.map(move |i| (lane, i));
        let expected: Vec<(char, usize)> = turn('a', 0..TURN)
            .chain(turn('b', 0..TURN))
            .chain(turn('b', TURN..2 * TURN))
            .chain(turn('a', TURN..2 * TURN))
            .chain(turn('a', 2 * TURN..n))
            .chain(turn('b', 2 * TURN..n))
            .collect();
        assert_eq!(made, expected);
    }

    /// This process's CPU time moves on as it works; a process gone has none.
    #[test]
    fn cpu_time_counts_what_a_process_spends() {
        let me = std::process::id();
        let before = cpu_time(me);
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut x = 0u64;
        while cpu_time(me) - before < Duration::from_millis(100) && Instant::now() < deadline {
            for _ in 0..100_000 {
                x = std::hint::black_box(x.wrapping_add(1));
            }
        }
        let spent = cpu_time(me) - before;
        assert!(spent >= Duration::from_millis(100), "{spent:?}");
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let gone = child.id();
        child.wait().unwrap();
        assert_eq!(cpu_time(gone), Duration::ZERO);
        assert_eq!(cpu_time(u32::MAX), Duration::ZERO);
    }

    #[test]
    fn one_lane_is_timed_call_after_call() {
        let mut made = Vec::new();
        assert_eq!(Run::time(3, |i| made.push(i)).0.len(), 3);
        assert_eq!(made, [0, 1, 2]);
    }
}
