//! Feeding the core and committing what it logged ([`Session::feed`] and its kin): the three
//! passes of the module's docs (`super`), and what is done when the core traps or a commit fails.

use std::collections::VecDeque;

use airlock_core::{CancelCause, Input, Output, StepDecision};

use super::{Batch, Fed, IdempotencyKey, Refusal, RefusalCode, Session, SessionError, Work};
use airlock_base::clock::now_ms;
use airlock_sandbox::core_host::CoreError;
use airlock_store::{IdempotencyRecord, StoreError};

impl Session {
    /// Feeds one input that finishes admitted work: the core decides, the events are
    /// committed, then effects start.
    pub async fn feed(&mut self, input: Input) -> Result<Fed, SessionError> {
        self.feed_keyed(input, None, Work::Admitted).await
    }

    /// [`Session::feed`] for a send whose idempotency key is recorded in the same commit, as new
    /// or admitted `work`. A continuable child refuses a send that is not its parent's to make
    /// (see [`child`]).
    pub async fn feed_keyed(
        &mut self,
        input: Input,
        key: Option<IdempotencyKey>,
        work: Work,
    ) -> Result<Fed, SessionError> {
        if let Some(parent) = &self.parent.0
            && let Err(refusal) = super::child::admits(self.id(), parent, &input, self.status)
        {
            return Ok(Fed { refusal: Some(refusal), first_seq: None });
        }
        let fed = self.feed_group(vec![(input, key)], work).await?;
        Ok(fed.into_iter().next().unwrap_or_default())
    }

    /// Feeds several inputs (e.g. the model chunks that arrived together) with one commit;
    /// answers what they did together.
    pub async fn feed_all(
        &mut self,
        inputs: Vec<Input>,
        key: Option<IdempotencyKey>,
    ) -> Result<Fed, SessionError> {
        let mut inputs: Vec<_> = inputs.into_iter().map(|input| (input, None)).collect();
        if let Some(first) = inputs.first_mut() {
            first.1 = key;
        }
        let fed = self.feed_group(inputs, Work::Admitted).await?;
        Ok(Fed {
            refusal: fed.iter().rev().find_map(|fed| fed.refusal.clone()),
            first_seq: fed.iter().find_map(|fed| fed.first_seq),
        })
    }

    /// Feeds inputs one after another and commits all their events at once (one fsync): each
    /// answers what it alone did, as if fed by itself. A send's idempotency key is recorded with
    /// its own first event. New `work` is admitted input by input (`Session::admit`); one past
    /// a limit is refused and the others go on. If the core traps, none of them is applied: the
    /// session is rebuilt from its log and given `recover`.
    pub async fn feed_group(
        &mut self,
        inputs: Vec<(Input, Option<IdempotencyKey>)>,
        work: Work,
    ) -> Result<Vec<Fed>, SessionError> {
        self.repair().await?;
        self.wake(work == Work::New).await?;
        let mut batch = Batch::default();
        let mut fed = Vec::with_capacity(inputs.len());
        let mut records = Vec::new();
        let mut queued = 0;
        for (input, key) in inputs {
            if work == Work::New {
                if let Err(exceeded) = self.admit(&input, queued) {
                    fed.push(Fed { refusal: Some(exceeded.into()), first_seq: None });
                    continue;
                }
                queued += 1;
            }
            if let Input::Cancel { cause, .. } = &input {
                match cause {
                    CancelCause::Disposed => self.goal.disarm(),
                    _ => self.goal.cancelled(),
                }
                self.cancel.cancel(*cause);
            }
            let before = batch.events();
            let refusal = match self.decide(input, &mut batch) {
                Ok(refusal) => refusal,
                Err(error) => return Err(self.recover_from_trap(error).await),
            };
            let first_seq = (batch.events() > before).then(|| self.next_seq + before as u64);
            if let (Some(key), Some(first)) = (key, first_seq) {
                records.push(IdempotencyRecord {
                    key: key.key,
                    session_id: self.config.session_id.clone(),
                    request_hash: key.request_hash,
                    response: serde_json::json!({"messageId": key.message_id, "seq": first})
                        .to_string(),
                    created_at: now_ms(),
                });
            }
            fed.push(Fed { refusal, first_seq });
        }
        let committed = self.commit(batch, records).await;
        self.release_if_idle();
        committed?;
        Ok(fed)
    }

    /// Hands one input to the core, answering the pre-step policy in the same pass (enter
    /// everything claimed, or pause at the budget); the outputs go to `batch`. Answers the core's refusal, if it refused.
    pub(super) fn decide(
        &mut self,
        input: Input,
        batch: &mut Batch,
    ) -> Result<Option<Refusal>, CoreError> {
        let mut queue = VecDeque::from([input]);
        let mut refusal = None;
        while let Some(input) = queue.pop_front() {
            for output in self.core_mut().handle(input, now_ms())? {
                match output {
                    Output::DecideStep { decision_id, claimed, .. } => {
                        let decision = match self.exhausted(&batch.spent) {
                            Some(why) => StepDecision::Pause(why),
                            None => {
                                StepDecision::Enter(claimed.into_iter().map(|m| m.id).collect())
                            }
                        };
                        queue.push_back(Input::Decided { decision_id, decision });
                    }
                    Output::AppendEvent(appended) => {
                        let seq = self.next_seq + batch.events() as u64;
                        let spent = self.follow(seq, &appended.json, &mut batch.hooks);
                        batch.spent.extend(spent);
                        batch.push(Output::AppendEvent(appended));
                    }
                    Output::Refused { code, message } => {
                        refusal = Some(Refusal::new(RefusalCode::Core(code), message))
                    }
                    other => batch.push(other),
                }
            }
        }
        Ok(refusal)
    }

    /// After a trap: the instance is gone with everything it had not committed. A fresh one is
    /// rebuilt from the log and given `recover`; answers the error to give the input's sender.
    pub(super) async fn recover_from_trap(&mut self, trap: CoreError) -> SessionError {
        if let Err(error) = self.rebuild().await {
            return error;
        }
        let mut batch = Batch::default();
        if let Err(again) = self.decide(Input::Recover, &mut batch) {
            return SessionError::Broken(again);
        }
        if let Err(error) = self.commit(batch, Vec::new()).await {
            return error;
        }
        SessionError::Trapped(trap)
    }

    /// Appends the batch's events in one commit, announces them and starts the work they ask
    /// for: its model streams before the commit, so the request travels while the log syncs,
    /// everything else once the commit is durable (`effects.rs`). While a recovery is owed
    /// (storage failed), a model request also waits for its commit: a retry that fails again
    /// must not spend one.
    pub(super) async fn commit(
        &mut self,
        mut batch: Batch,
        records: Vec<IdempotencyRecord>,
    ) -> Result<Option<u64>, SessionError> {
        let cautious = self.owes_recovery;
        if !cautious {
            self.start_model_streams(&mut batch.outputs);
        }
        let first_seq = self.append(&mut batch, records).await?;
        if cautious {
            self.start_model_streams(&mut batch.outputs);
        }
        let waiting = batch.outputs.iter().rev().find_map(|output| match output {
            Output::Waiting(calls) => Some(calls),
            _ => None,
        });
        if let Some(calls) = waiting {
            calls.clone_into(&mut self.waiting.lock().expect("waiting lock"));
        }
        self.announce(&mut batch.outputs, first_seq.unwrap_or(self.next_seq));
        self.start_effects(batch.outputs);
        Ok(first_seq)
    }

    /// Appends the batch's events, with the idempotency records of its keyed sends, in one
    /// commit; answers the first event's seq. When the commit fails the core is ahead of the
    /// durable log, so it is rebuilt from what was committed and nothing is announced.
    pub(super) async fn append(
        &mut self,
        batch: &mut Batch,
        records: Vec<IdempotencyRecord>,
    ) -> Result<Option<u64>, SessionError> {
        let events: Vec<String> = batch
            .outputs
            .iter()
            .filter_map(|o| match o {
                Output::AppendEvent(appended) => Some(appended.json.clone()),
                _ => None,
            })
            .collect();
        let first_seq = (!events.is_empty()).then_some(self.next_seq);
        if let Some(first) = first_seq {
            let count = events.len() as u64;
            let bytes: usize = events.iter().map(String::len).sum();
            let spent = std::mem::take(&mut batch.spent);
            let hooks = std::mem::take(&mut batch.hooks);
            let index = self.index(first, &mut batch.outputs, records, spent.clone(), hooks);
            let runs_ended = index.hooks.iter().any(|hook| hook.kind == "run.completed");
            if let Err(error) = self.log.append(&self.config.session_id, events, index).await {
                if matches!(error, StoreError::Fenced(_)) {
                    // Another gateway holds the log now: this instance must not go on.
                    self.fenced = true;
                    return Err(error.into());
                }
                // The core is ahead of the durable log: rebuild it from what was committed, to
                // be recovered as after a restart once storage takes commits again.
                self.owes_recovery = true;
                airlock_base::metrics::global().commit_failures.inc();
                self.rebuild().await?;
                return Err(error.into());
            }
            self.next_seq = first + count;
            if runs_ended {
                self.owned.clear(); // reported with the commit
            }
            self.snapshot.logged += bytes;
            self.count(&spent);
        }
        Ok(first_seq)
    }
}
