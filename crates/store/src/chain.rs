//! A fork's log is shared, not copied: it reads its source's events through the seq it was forked
//! at, then its own. These are the stretches a session's log is read from, on either backend.

/// The most forks of forks one session's log is read through; a fork deeper than that copies its
/// prefix instead of sharing it.
pub const MAX_FORK_CHAIN: usize = 16;

/// The sessions a session's log is shared with, from it back to the first with a log of its own:
/// `(session_id, base_session_id, base_seq)` rows, the session first. `?1`/`$1` is the session,
/// `?2`/`$2` the most links read.
pub(crate) const CHAIN_SQL: &str = "WITH RECURSIVE chain (session_id, base_session_id, base_seq, n) AS ( \
     SELECT session_id, base_session_id, base_seq, 0 FROM sessions WHERE session_id = $1 \
     UNION ALL SELECT s.session_id, s.base_session_id, s.base_seq, c.n + 1 FROM sessions s \
     JOIN chain c ON s.session_id = c.base_session_id WHERE c.n < $2) \
     SELECT session_id, base_session_id, base_seq FROM chain ORDER BY n";

/// One stretch of a session's log as stored: `session_id`'s events after `from` (`None`: from
/// its first) through `through` (`u64::MAX`: to its end).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Segment {
    pub session_id: String,
    pub from: Option<u64>,
    pub through: u64,
}

impl Segment {
    /// The stretches of `session_id`'s log in seq order, from its chain of shared logs (see
    /// [`CHAIN_SQL`]): a session with a log of its own is one stretch; a fork is the prefix it
    /// shares through its `base_seq` (read the same way from its source), then its own events.
    pub fn chain(
        session_id: &str,
        links: Vec<(String, Option<String>, Option<u64>)>,
    ) -> Vec<Segment> {
        let mut segments = Vec::with_capacity(links.len().max(1));
        let mut through = u64::MAX;
        for (id, _, base_seq) in links {
            segments.push(Segment { session_id: id, from: base_seq, through });
            match base_seq {
                Some(at) => through = through.min(at),
                None => break,
            }
        }
        if segments.is_empty() {
            segments.push(Segment { session_id: session_id.to_owned(), from: None, through });
        }
        segments.reverse();
        segments
    }

    /// Where a read after `after` starts in this stretch.
    pub fn after(&self, after: Option<u64>) -> Option<u64> {
        after.max(self.from)
    }

    /// `through` as SQL takes it.
    pub fn through_sql(&self) -> i64 {
        self.through.min(i64::MAX as u64) as i64
    }
}
