//! What this machine holds: the ceiling of live core instances.

/// Address-space mappings one live session with a core instance adds to the process: measured
/// with wasmtime 48 on Linux, 4.00 a session from 500 to 3,000 sessions running at once.
const MAPS_PER_INSTANCE: usize = 4;

/// Memory budgeted for one live session with a core instance. A fresh running session was
/// measured at about 150 KiB of RSS; the core's heap grows with the session's context, so this
/// budgets several times that.
const BYTES_PER_INSTANCE: u64 = 1 << 20;

/// The most core instances this machine holds with room to spare: a fraction of the memory
/// mappings the kernel allows a process (`vm.max_map_count`), and of the memory there is.
pub fn machine_instances() -> usize {
    let maps = read_number("/proc/sys/vm/max_map_count").unwrap_or(65_530);
    let by_maps = maps as usize * 3 / 4 / MAPS_PER_INSTANCE;
    let memory = meminfo_bytes("MemTotal:").unwrap_or(8 << 30);
    let by_memory = (memory * 3 / 4 / BYTES_PER_INSTANCE) as usize;
    by_maps.min(by_memory).max(64)
}

fn read_number(path: &str) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// A line of `/proc/meminfo` (kB), in bytes.
fn meminfo_bytes(field: &str) -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|line| line.starts_with(field))?;
    let kb: u64 = line[field.len()..].trim().trim_end_matches("kB").trim().parse().ok()?;
    Some(kb * 1024)
}
