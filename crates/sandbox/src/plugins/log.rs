//! A plugin's log budget: how much its `log` calls may write to the gateway's log. Each call may
//! write `max_log_kb`, and all calls of one plugin together `log_kb_per_minute`; a line over
//! either is dropped and counted, and the call ends with one warning saying how much was dropped
//! (`airlock_plugin_log_dropped_bytes_total` counts it too). A line costs its message (cut to
//! [`MOST_LINE`] bytes) plus [`LINE_COST`], so a flood of empty lines is bounded as well.

use std::num::NonZeroU32;
use std::sync::Arc;

use governor::clock::{Clock, DefaultClock};
use governor::middleware::NoOpMiddleware;
use governor::state::{InMemoryState, NotKeyed};
use governor::{Quota, RateLimiter};

use super::manifest::Limits;

/// The most bytes of one log line kept.
const MOST_LINE: usize = 4096;

/// What a line costs beyond its message: about what the log writes around it.
const LINE_COST: usize = 128;

/// The bytes one plugin may log a minute, over all its calls; shared by its calls.
pub(super) struct LogRate<C: Clock = DefaultClock> {
    /// `None` when the rate is 0: nothing may be logged.
    limiter: Option<RateLimiter<NotKeyed, InMemoryState, C, NoOpMiddleware<C::Instant>>>,
}

impl LogRate {
    /// `kib_per_minute` KiB a minute, all of it available at once.
    pub(super) fn new(kib_per_minute: u64) -> LogRate {
        LogRate::with_clock(kib_per_minute, DefaultClock::default())
    }
}

impl<C: Clock> LogRate<C> {
    fn with_clock(kib_per_minute: u64, clock: C) -> LogRate<C> {
        let bytes = u32::try_from(kib_per_minute.saturating_mul(1024)).unwrap_or(u32::MAX);
        let limiter = NonZeroU32::new(bytes)
            .map(|bytes| RateLimiter::direct_with_clock(Quota::per_minute(bytes), clock));
        LogRate { limiter }
    }

    /// Takes `bytes` from the minute's budget if they are all there.
    fn admit(&self, bytes: usize) -> bool {
        let (Some(limiter), Ok(bytes)) = (&self.limiter, u32::try_from(bytes)) else {
            return false;
        };
        NonZeroU32::new(bytes).is_none_or(|n| matches!(limiter.check_n(n), Ok(Ok(()))))
    }
}

/// What one call may still log, and what it dropped.
pub(super) struct LogBudget {
    left: usize,
    rate: Arc<LogRate>,
    dropped_lines: u64,
    dropped_bytes: u64,
}

impl LogBudget {
    /// A call's budget under `limits`, drawing on its plugin's `rate`.
    pub(super) fn new(limits: &Limits, rate: Arc<LogRate>) -> LogBudget {
        let left = usize::try_from(limits.max_log_kb.saturating_mul(1024)).unwrap_or(usize::MAX);
        LogBudget { left, rate, dropped_lines: 0, dropped_bytes: 0 }
    }

    /// The line to write for `message`, cut to [`MOST_LINE`] bytes; `None` when it would go
    /// over the budget, and it is counted as dropped.
    pub(super) fn admit<'m>(&mut self, message: &'m str) -> Option<&'m str> {
        let line = &message[..message.floor_char_boundary(MOST_LINE)];
        let cost = line.len() + LINE_COST;
        if cost <= self.left && self.rate.admit(cost) {
            self.left -= cost;
            return Some(line);
        }
        self.dropped_lines += 1;
        self.dropped_bytes += line.len() as u64;
        None
    }

    /// At the end of a call: one warning saying what was dropped, if anything was.
    pub(super) fn report(&self, plugin: &str, limits: &Limits) {
        if self.dropped_lines == 0 {
            return;
        }
        let (dropped_lines, dropped_bytes) = (self.dropped_lines, self.dropped_bytes);
        airlock_base::metrics::global()
            .plugin_log_dropped
            .get_or_create(&vec![("plugin", plugin.to_owned())])
            .inc_by(dropped_bytes);
        tracing::warn!(
            plugin,
            dropped_lines,
            dropped_bytes,
            "plugin log lines dropped over its budget of {} KiB a call and {} KiB a minute; \
             raise `max_log_kb` or `log_kb_per_minute` under [limits] in its plugin.toml to keep more",
            limits.max_log_kb,
            limits.log_kb_per_minute,
        );
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use governor::clock::FakeRelativeClock;

    use super::*;

    #[test]
    fn a_plugins_log_rate_is_shared_by_its_calls_and_refills_over_a_minute() {
        let clock = FakeRelativeClock::default();
        let rate = LogRate::with_clock(8, clock.clone());
        assert!(rate.admit(6 * 1024), "a first call takes most of the minute's 8 KiB");
        assert!(!rate.admit(4 * 1024), "a second call finds only 2 KiB left");
        assert!(rate.admit(2 * 1024));
        clock.advance(Duration::from_secs(30));
        assert!(rate.admit(4 * 1024), "half a minute brings back half");
        assert!(!rate.admit(1));
        assert!(!rate.admit(usize::MAX), "more than a whole minute's never fits");
    }

    #[test]
    fn a_zero_log_rate_admits_nothing() {
        assert!(!LogRate::with_clock(0, FakeRelativeClock::default()).admit(1));
    }
}
