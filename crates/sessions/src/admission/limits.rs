//! What may be held and done, and the refusal of what is past it.

/// What each tenant may hold and do (0: no limit).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TenantLimits {
    /// Sessions stored and not disposed (children and forks count).
    pub sessions: u64,
    /// Event streams open at once (held runs count).
    pub streams: usize,
    /// Messages and runs enqueued per second, sustained (bursts of twice as many pass).
    pub per_second: u32,
    /// Sessions running a turn at once.
    pub turns: usize,
    /// Sessions (children included) and forks created per minute (bursts of as many).
    pub creates_per_minute: u32,
    /// Bytes of log its sessions not disposed keep.
    pub bytes: u64,
}

impl Default for TenantLimits {
    fn default() -> TenantLimits {
        TenantLimits {
            sessions: 10_000,
            streams: 1_000,
            per_second: 50,
            turns: 100,
            creates_per_minute: 600,
            bytes: 0,
        }
    }
}

/// Every limit of a gateway.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Limits {
    /// What each tenant may hold and do.
    pub tenant: TenantLimits,
    /// How many levels of subagents a root session may have below it.
    pub depth: u32,
    /// How many subagents below one root session may work (run a turn) at once.
    pub descendants: usize,
    /// How many messages may wait in one session's queue.
    pub queue: usize,
    /// How many core instances may be alive at once; `None`: what this machine allows
    /// (`machine_instances`).
    pub instances: Option<usize>,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            tenant: TenantLimits::default(),
            depth: 4,
            descendants: 32,
            queue: 1_000,
            instances: None,
        }
    }
}

/// A limit that refused something.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    /// `--tenant-sessions`.
    Sessions,
    /// `--tenant-streams`.
    Streams,
    /// `--tenant-rate`.
    Rate,
    /// `--tenant-turns`.
    Turns,
    /// `--tenant-creates`.
    Creates,
    /// `--tenant-bytes`.
    Bytes,
    /// `--max-subagent-depth`.
    Depth,
    /// `--max-descendants`.
    Descendants,
    /// `--max-queue`.
    Queue,
    /// `--max-instances`.
    Instances,
}

impl Limit {
    /// The flag that sets it.
    pub fn flag(self) -> &'static str {
        match self {
            Limit::Sessions => "--tenant-sessions",
            Limit::Streams => "--tenant-streams",
            Limit::Rate => "--tenant-rate",
            Limit::Turns => "--tenant-turns",
            Limit::Creates => "--tenant-creates",
            Limit::Bytes => "--tenant-bytes",
            Limit::Depth => "--max-subagent-depth",
            Limit::Descendants => "--max-descendants",
            Limit::Queue => "--max-queue",
            Limit::Instances => "--max-instances",
        }
    }

    /// Whether waiting, not asking for less, is what helps: a rate, or the machine being full.
    pub fn passes(self) -> bool {
        matches!(self, Limit::Rate | Limit::Creates | Limit::Instances)
    }
}

/// Work refused by a limit: which one, whose, and what to do.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{what}, the limit ({flag} {most}); {hint}", flag = limit.flag())]
pub struct Exceeded {
    /// The limit.
    pub limit: Limit,
    /// Its value.
    pub most: u64,
    /// What is at the limit, for a person: `tenant "a" has 40 sessions stored`.
    pub what: String,
    /// What to do.
    pub hint: &'static str,
    /// Seconds after which trying again may pass.
    pub retry_after: u64,
}

impl Exceeded {
    pub(super) fn new(limit: Limit, most: u64, what: String, hint: &'static str) -> Exceeded {
        Exceeded { limit, most, what, hint, retry_after: 1 }
    }
}
