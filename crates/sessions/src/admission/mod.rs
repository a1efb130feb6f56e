//! Admission: the one accounting that every way work grows inside the gateway goes through.
//!
//! A session or a turn comes to exist in many ways: an HTTP create, run or fork, a message, a
//! goal round, the model's `agent`, `spawn_agent` and `send_message`, ACP and stdio. Each asks
//! [`Admission`] first, whatever face it came through, and an unknown state denies. What is
//! counted:
//!
//! - per tenant: sessions stored, event streams open (held runs too), messages a second, sessions
//!   and forks a minute, sessions running a turn, stored bytes;
//! - per root session: how deep its subagents go and how many of them work at once;
//! - per session: how many messages wait in its queue;
//! - per gateway: the core instances alive, a ceiling derived from what the machine allows.
//!
//! A count that must hold exactly (turns, streams, working subagents) is a [`Slot`] taken under
//! the count's lock and given back when dropped: a session holds its turn slot and its subagent
//! slot while it runs, so two requests at the same instant cannot both take the last one. Work
//! that finishes what was admitted already (recovery, a child's settlement notice) is counted
//! without being refused ([`Admission::turn_forced`]).

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use tokio::sync::Notify;

mod limits;
mod machine;

pub use limits::{Exceeded, Limit, Limits, TenantLimits};
pub use machine::machine_instances;

/// One unit of a count, held while it is used; dropping it gives it back.
#[must_use = "a slot is given back as soon as it is dropped"]
pub struct Slot {
    held: Option<(Arc<Counts>, String)>,
}

impl Slot {
    /// A slot of no count (the work is not limited).
    pub fn free() -> Slot {
        Slot { held: None }
    }
}

impl std::fmt::Debug for Slot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.held {
            Some((_, key)) => write!(f, "Slot({key})"),
            None => f.write_str("Slot(free)"),
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        if let Some((counts, key)) = self.held.take() {
            counts.give_back(&key);
        }
    }
}

/// Counts by key (a tenant, a root session), each bounded, with a wake-up for those who wait
/// for one to be given back.
#[derive(Default)]
struct Counts {
    held: Mutex<HashMap<String, usize>>,
    freed: Arc<Notify>,
}

impl Counts {
    /// Takes one of `key`'s, unless `most` (0: no limit) are held; `force` takes it anyway.
    fn take(self: &Arc<Self>, key: &str, most: usize, force: bool) -> Option<Slot> {
        let mut held = self.held.lock().expect("counts lock");
        let count = held.entry(key.to_owned()).or_default();
        if !force && most > 0 && *count >= most {
            return None;
        }
        *count += 1;
        Some(Slot { held: Some((self.clone(), key.to_owned())) })
    }

    fn give_back(&self, key: &str) {
        let mut held = self.held.lock().expect("counts lock");
        if let Some(count) = held.get_mut(key) {
            *count -= 1;
            if *count == 0 {
                held.remove(key);
            }
        }
        drop(held);
        self.freed.notify_waiters();
    }

    fn count(&self, key: &str) -> usize {
        self.held.lock().expect("counts lock").get(key).copied().unwrap_or(0)
    }
}

/// The accounting of one gateway: its limits, and what is held against them now.
pub struct Admission {
    limits: Limits,
    /// The core instances this machine holds, or `--max-instances`.
    instance_ceiling: usize,
    rate: Option<DefaultKeyedRateLimiter<String>>,
    creates: Option<DefaultKeyedRateLimiter<String>>,
    turns: Arc<Counts>,
    streams: Arc<Counts>,
    descendants: Arc<Counts>,
    instances: Arc<AtomicUsize>,
}

impl Default for Admission {
    fn default() -> Admission {
        Admission::new(Limits::default())
    }
}

impl Admission {
    /// The accounting of a gateway with these limits.
    pub fn new(limits: Limits) -> Admission {
        let keyed = |quota: Option<Quota>| quota.map(RateLimiter::keyed);
        let rate = NonZeroU32::new(limits.tenant.per_second).map(|rate| {
            let burst = rate.saturating_mul(NonZeroU32::new(2).expect("2 is not 0"));
            Quota::per_second(rate).allow_burst(burst)
        });
        let creates = NonZeroU32::new(limits.tenant.creates_per_minute).map(Quota::per_minute);
        Admission {
            limits,
            instance_ceiling: limits.instances.unwrap_or_else(machine_instances),
            rate: keyed(rate),
            creates: keyed(creates),
            turns: Arc::default(),
            streams: Arc::default(),
            descendants: Arc::default(),
            instances: Arc::default(),
        }
    }

    /// The limits.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// One more message, run or goal round of `tenant` (none: not limited), under its rate.
    pub fn enqueue(&self, tenant: Option<&str>) -> Result<(), Exceeded> {
        let per_second = self.limits.tenant.per_second;
        let what =
            |tenant: &str| format!("tenant {tenant:?} enqueues more than {per_second} a second");
        check_rate(self.rate.as_ref(), tenant, Limit::Rate, per_second, what)
    }

    /// One more session or fork of `tenant`, under its rate of creations.
    pub fn create(&self, tenant: Option<&str>) -> Result<(), Exceeded> {
        let per_minute = self.limits.tenant.creates_per_minute;
        let what = |tenant: &str| {
            format!("tenant {tenant:?} creates more than {per_minute} sessions a minute")
        };
        check_rate(self.creates.as_ref(), tenant, Limit::Creates, per_minute, what)
    }

    /// `tenant` may store one more session, holding `stored` (not disposed).
    pub fn stored(&self, tenant: &str, stored: u64) -> Result<(), Exceeded> {
        let what = || format!("tenant {tenant:?} has {stored} sessions stored");
        let most = self.limits.tenant.sessions;
        within(Limit::Sessions, most, stored, what, "dispose of some first")
    }

    /// `tenant`'s sessions keep `bytes` of log: under its quota, it may add more.
    pub fn bytes(&self, tenant: &str, bytes: u64) -> Result<(), Exceeded> {
        let what = || format!("the sessions of tenant {tenant:?} keep {bytes} bytes");
        let most = self.limits.tenant.bytes;
        within(Limit::Bytes, most, bytes, what, "dispose of sessions it no longer needs")
    }

    /// A turn slot of `tenant`, held while one of its sessions runs: refused past its quota.
    pub fn turn(&self, tenant: Option<&str>) -> Result<Slot, Exceeded> {
        let Some(tenant) = tenant else { return Ok(Slot::free()) };
        let most = self.limits.tenant.turns;
        match self.turns.take(tenant, most, false) {
            Some(slot) => Ok(slot),
            None => Err(self.turn_room(Some(tenant)).expect_err("no slot, no room")),
        }
    }

    /// Whether `tenant` has a turn slot free now, without taking it: a check before making what
    /// would then need one (a subagent), so that little is made only to be refused. The slot
    /// itself is taken when the work is fed ([`Admission::turn`]).
    pub fn turn_room(&self, tenant: Option<&str>) -> Result<(), Exceeded> {
        let Some(tenant) = tenant else { return Ok(()) };
        let (most, running) = (self.limits.tenant.turns as u64, self.turns.count(tenant) as u64);
        let what = || format!("tenant {tenant:?} has {most} sessions running a turn");
        within(Limit::Turns, most, running, what, "send again once one of them is idle")
    }

    /// A turn slot of `tenant` for work already admitted (recovery, a settlement notice): taken
    /// past the quota too, so that new work waits until enough are given back.
    pub fn turn_forced(&self, tenant: Option<&str>) -> Slot {
        match tenant {
            Some(tenant) => self.turns.take(tenant, 0, true).expect("a forced slot is taken"),
            None => Slot::free(),
        }
    }

    /// Resolves once some tenant's turn slot is given back after this call (then try
    /// [`Admission::turn`] again).
    pub fn turn_freed(&self) -> impl Future<Output = ()> + Send + 'static {
        self.turns.freed.clone().notified_owned()
    }

    /// How many of `tenant`'s sessions hold a turn slot now.
    #[cfg(test)]
    pub fn running(&self, tenant: &str) -> usize {
        self.turns.count(tenant)
    }

    /// An event stream (or a held run) of `tenant`, for as long as the slot is held.
    pub fn stream(&self, tenant: Option<&str>) -> Result<Slot, Exceeded> {
        let Some(tenant) = tenant else { return Ok(Slot::free()) };
        let most = self.limits.tenant.streams;
        self.streams.take(tenant, most, false).ok_or_else(|| {
            let what = format!("tenant {tenant:?} has {most} event streams and held runs open");
            Exceeded::new(Limit::Streams, most as u64, what, "close one first")
        })
    }

    /// A subagent of a session `depth` levels below its root may be made.
    pub fn depth(&self, depth: u32) -> Result<(), Exceeded> {
        let most = self.limits.depth;
        if depth < most {
            return Ok(());
        }
        let what = format!(
            "a subagent here would be {} levels below its root session",
            depth.saturating_add(1)
        );
        let hint = "do this work in this session instead of in a subagent";
        Err(Exceeded::new(Limit::Depth, u64::from(most), what, hint))
    }

    /// A working subagent below `root`, held while it runs: refused past the limit.
    pub fn descendant(&self, root: &str) -> Result<Slot, Exceeded> {
        let most = self.limits.descendants;
        match self.descendants.take(root, most, false) {
            Some(slot) => Ok(slot),
            None => Err(self.descendant_room(root).expect_err("no slot, no room")),
        }
    }

    /// Whether a subagent below `root` could work now, without taking its slot (see
    /// [`Admission::turn_room`]).
    pub fn descendant_room(&self, root: &str) -> Result<(), Exceeded> {
        let (most, working) = (self.limits.descendants as u64, self.descendants.count(root) as u64);
        let what = || format!("root session {root:?} has {most} subagents working below it");
        let hint = "wait for some of them to finish, or do the work in this session";
        within(Limit::Descendants, most, working, what, hint)
    }

    /// A working subagent below `root` whose work was admitted already (recovery, a notice).
    pub fn descendant_forced(&self, root: &str) -> Slot {
        self.descendants.take(root, 0, true).expect("a forced slot is taken")
    }

    /// A session holding `pending` messages may take one more.
    pub fn queue(&self, session_id: &str, pending: usize) -> Result<(), Exceeded> {
        let what = || format!("session {session_id:?} has {pending} messages waiting");
        let hint = "send again once the agent has taken some";
        within(Limit::Queue, self.limits.queue as u64, pending as u64, what, hint)
    }

    /// A core instance for new work, held for as long as the instance lives: refused once the
    /// gateway holds as many as the machine allows.
    pub fn instance(&self) -> Result<Instance, Exceeded> {
        let most = self.instance_ceiling;
        let took = self.instances.fetch_update(Ordering::AcqRel, Ordering::Acquire, |live| {
            (live < most).then_some(live + 1)
        });
        match took {
            Ok(_) => Ok(Instance { live: Some(self.instances.clone()) }),
            Err(live) => {
                let what = format!("this gateway has {live} sessions in memory");
                let hint = "send again in a moment; the sessions already running go on";
                Err(Exceeded::new(Limit::Instances, most as u64, what, hint))
            }
        }
    }

    /// A core instance for work already running (a trap's rebuild, a recovery): counted, never
    /// refused.
    pub fn instance_forced(&self) -> Instance {
        self.instances.fetch_add(1, Ordering::AcqRel);
        Instance { live: Some(self.instances.clone()) }
    }

    /// A core instance for new work ([`Admission::instance`]: refused past the ceiling), or for
    /// work admitted before ([`Admission::instance_forced`]: counted, never refused).
    pub fn instance_for(&self, new: bool) -> Result<Instance, Exceeded> {
        if new { self.instance() } else { Ok(self.instance_forced()) }
    }

    /// How many core instances are alive.
    pub fn instances(&self) -> usize {
        self.instances.load(Ordering::Acquire)
    }

    /// The most core instances that may be alive.
    pub fn instance_ceiling(&self) -> usize {
        self.instance_ceiling
    }
}

/// One live core instance, counted until it is dropped.
#[derive(Debug, Default)]
#[must_use = "the instance is uncounted as soon as this is dropped"]
pub struct Instance {
    live: Option<Arc<AtomicUsize>>,
}

impl Drop for Instance {
    fn drop(&mut self) {
        if let Some(live) = self.live.take() {
            live.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

/// Checks `tenant`'s bucket of `limiter`; `what` says who is over it.
fn check_rate(
    limiter: Option<&DefaultKeyedRateLimiter<String>>,
    tenant: Option<&str>,
    limit: Limit,
    most: u32,
    what: impl FnOnce(&str) -> String,
) -> Result<(), Exceeded> {
    let (Some(limiter), Some(tenant)) = (limiter, tenant) else { return Ok(()) };
    limiter.check_key(&tenant.to_owned()).map_err(|not_until| {
        let wait = not_until.wait_time_from(DefaultClock::default().now());
        let mut exceeded =
            Exceeded::new(limit, u64::from(most), what(tenant), "wait as Retry-After says");
        exceeded.retry_after = wait.as_secs_f64().ceil().max(1.0) as u64;
        exceeded
    })
}

/// `Ok` while `have` is under `most` (0: no limit); else `limit` is exceeded, `what` saying by
/// whom and `hint` what to do.
fn within(
    limit: Limit,
    most: u64,
    have: u64,
    what: impl FnOnce() -> String,
    hint: &'static str,
) -> Result<(), Exceeded> {
    if most == 0 || have < most {
        return Ok(());
    }
    Err(Exceeded::new(limit, most, what(), hint))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(tenant: TenantLimits) -> Limits {
        Limits { tenant, ..Limits::default() }
    }

    #[test]
    fn a_tenant_past_its_rate_waits_and_others_do_not() {
        let admission =
            Admission::new(limits(TenantLimits { per_second: 1, ..Default::default() }));
        assert!(admission.enqueue(Some("a")).is_ok());
        assert!(admission.enqueue(Some("a")).is_ok(), "a burst of twice the rate passes");
        let refused = admission.enqueue(Some("a")).unwrap_err();
        assert_eq!(refused.limit, Limit::Rate);
        assert!(refused.to_string().contains("--tenant-rate 1"), "{refused}");
        assert!(admission.enqueue(Some("b")).is_ok(), "each tenant has its own bucket");
        assert!(admission.enqueue(None).is_ok(), "no tenant, no rate");
    }

    #[test]
    fn turn_slots_are_exact_and_given_back_when_dropped() {
        let admission = Admission::new(limits(TenantLimits { turns: 2, ..Default::default() }));
        let one = admission.turn(Some("a")).unwrap();
        let two = admission.turn(Some("a")).unwrap();
        let refused = admission.turn(Some("a")).unwrap_err();
        assert_eq!((refused.limit, refused.most), (Limit::Turns, 2));
        assert!(admission.turn(Some("b")).is_ok(), "another tenant's count");
        let forced = admission.turn_forced(Some("a"));
        assert_eq!(admission.running("a"), 3, "a forced slot counts");
        drop((one, forced));
        assert_eq!(admission.running("a"), 1);
        let _three = admission.turn(Some("a")).unwrap();
        drop(two);
        assert!(admission.turn(None).is_ok(), "no tenant, no quota");
    }

    #[tokio::test]
    async fn a_waiter_hears_a_turn_slot_given_back() {
        let admission = Admission::new(limits(TenantLimits { turns: 1, ..Default::default() }));
        let held = admission.turn(Some("a")).unwrap();
        let freed = admission.turn_freed();
        drop(held);
        freed.await;
        assert!(admission.turn(Some("a")).is_ok());
    }

    #[test]
    fn subagents_stop_at_the_depth_and_the_working_descendants() {
        let admission = Admission::new(Limits { depth: 2, descendants: 1, ..Limits::default() });
        assert!(admission.depth(1).is_ok());
        let deep = admission.depth(2).unwrap_err();
        assert!(deep.to_string().contains("3 levels below its root"), "{deep}");
        let working = admission.descendant("root").unwrap();
        assert_eq!(admission.descendant("root").unwrap_err().limit, Limit::Descendants);
        assert!(admission.descendant("other").is_ok());
        drop(working);
        assert!(admission.descendant("root").is_ok());
    }

    #[test]
    fn instances_past_the_ceiling_are_refused_but_running_work_is_counted() {
        let admission = Admission::new(Limits { instances: Some(2), ..Limits::default() });
        let (a, b) = (admission.instance().unwrap(), admission.instance().unwrap());
        let refused = admission.instance().unwrap_err();
        assert!(refused.limit.passes(), "the machine being full passes");
        let rebuilt = admission.instance_forced();
        assert_eq!(admission.instances(), 3);
        drop((a, b, rebuilt));
        assert_eq!(admission.instances(), 0);
        assert!(admission.instance().is_ok());
    }

    #[test]
    fn the_machine_holds_a_sane_number_of_instances() {
        let most = machine_instances();
        assert!((64..1_000_000).contains(&most), "{most}");
    }
}
