//! What a scenario reads off the gateway process (`/proc`) and how it sums up its samples.

use std::time::Duration;

/// The resident memory of a process, in MB (`VmRSS` of `/proc/<pid>/status`): every page mapped,
/// a page of the core's data that 1,000 instances share counted 1,000 times.
pub fn rss_mb(pid: u32) -> f64 {
    proc_mb(&format!("/proc/{pid}/status"), "VmRSS:")
}

/// The proportional memory of a process, in MB (`Pss` of `/proc/<pid>/smaps_rollup`): a page
/// mapped N times counts 1/N each time, so this is what the process really holds.
pub fn pss_mb(pid: u32) -> f64 {
    proc_mb(&format!("/proc/{pid}/smaps_rollup"), "Pss:")
}

/// A `key: N kB` line of a `/proc` file, in MB.
fn proc_mb(file: &str, key: &str) -> f64 {
    proc_value(file, key) / 1024.0
}

/// The number on the `key` line of a `/proc` file (NaN if there is none).
fn proc_value(file: &str, key: &str) -> f64 {
    let text = std::fs::read_to_string(file).unwrap_or_default();
    proc_field(&text, key).unwrap_or(f64::NAN)
}

/// The number after `key` on its line of a `/proc` status-like text (`key: N [kB]`).
fn proc_field(text: &str, key: &str) -> Option<f64> {
    text.lines()
        .find_map(|line| line.strip_prefix(key))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// The CPU time the calling thread has used so far, kernel time included, in ms (the first field
/// of `/proc/thread-self/schedstat`, in ns): fine enough to time one syscall's work.
pub fn thread_cpu_ms() -> f64 {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
    let ns = stat.split_whitespace().next().and_then(|ns| ns.parse::<f64>().ok());
    ns.map_or(f64::NAN, |ns| ns / 1e6)
}

/// Percentile `p` (0–100) of `samples`, in ms.
pub fn percentile(samples: &mut [Duration], p: f64) -> f64 {
    samples.sort_unstable();
    let rank = ((p / 100.0) * samples.len() as f64).ceil() as usize;
    samples[rank.clamp(1, samples.len()) - 1].as_secs_f64() * 1000.0
}

/// The CPU time and context switches a process has used so far.
#[derive(Clone, Copy, Debug)]
pub struct Usage {
    /// User plus system time, in ms (`utime + stime` of `/proc/<pid>/stat`: every thread the
    /// process ever had, in clock ticks).
    pub cpu_ms: f64,
    /// The part of `cpu_ms` spent in the kernel (`stime`): system calls, page faults, and the
    /// interrupts taken while the process ran.
    pub kernel_ms: f64,
    /// Voluntary plus involuntary context switches of the threads alive now (the sum over
    /// `/proc/<pid>/task/*/status`; a thread that ended took its count with it, and the gateway's
    /// threads live as long as it does, its blocking pool's for 10 s after their last job).
    pub switches: f64,
    /// What the process wrote to files, in KB (`write_bytes` of `/proc/<pid>/io`: each page it
    /// dirtied in the page cache, so the log's WAL frames and checkpoints, not its sockets).
    pub written_kb: f64,
}

impl Usage {
    /// What `pid` has used until now.
    pub fn of(pid: u32) -> Usage {
        let written_kb = proc_value(&format!("/proc/{pid}/io"), "write_bytes:") / 1024.0;
        let (user_ms, kernel_ms) = cpu_times(pid);
        Usage { cpu_ms: user_ms + kernel_ms, kernel_ms, switches: switches(pid), written_kb }
    }

    /// What was used since `earlier`, divided by `n` (e.g. per turn).
    pub fn per(self, earlier: Usage, n: usize) -> Usage {
        let n = n as f64;
        Usage {
            cpu_ms: (self.cpu_ms - earlier.cpu_ms) / n,
            kernel_ms: (self.kernel_ms - earlier.kernel_ms) / n,
            switches: (self.switches - earlier.switches) / n,
            written_kb: (self.written_kb - earlier.written_kb) / n,
        }
    }
}

/// `(user, kernel)` time in ms.
fn cpu_times(pid: u32) -> (f64, f64) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // The command name may hold spaces; the fields after its closing parenthesis do not.
    let fields: Vec<&str> =
        stat.rsplit_once(')').map_or("", |(_, rest)| rest).split_whitespace().collect();
    // After the name: state is field 3, utime 14 and stime 15 (1-based, as in proc(5)).
    let tick = |i: usize| fields.get(i - 3).and_then(|v| v.parse::<f64>().ok()).unwrap_or(f64::NAN);
    let ms = |ticks: f64| ticks * 1000.0 / clock_ticks_per_second();
    (ms(tick(14)), ms(tick(15)))
}

/// `sysconf(_SC_CLK_TCK)`: 100 on every Linux this runs on.
fn clock_ticks_per_second() -> f64 {
    100.0
}

fn switches(pid: u32) -> f64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return f64::NAN };
    tasks
        .flatten()
        .map(|task| {
            let status = std::fs::read_to_string(task.path().join("status")).unwrap_or_default();
            proc_field(&status, "voluntary_ctxt_switches:").unwrap_or(0.0)
                + proc_field(&status, "nonvoluntary_ctxt_switches:").unwrap_or(0.0)
        })
        .sum()
}
