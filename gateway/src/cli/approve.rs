//! `airlock run --approve`: who answers a call that waits for a person's approval (a tool named
//! by `--approval-for`, or a plugin whose manifest asks for it). `ask` puts the question on
//! stderr and reads `y` or `n` from stdin (a terminal, or a pipe: `yes | airlock run …`); `all`
//! approves every call, `none` denies every call.

use std::io::{BufRead, Write};

use airlock_core::{ApprovalState, CallAnswer, Event, EventData, WaitingCall};
use clap::ValueEnum;
use tokio::sync::mpsc;

use airlock_sessions::{InputError, SessionHandle, Sessions, Update};

/// `--approve`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum Approve {
    /// Ask on stderr; read `y`/`n` from stdin (end of input denies).
    #[default]
    Ask,
    /// Approve every call that waits.
    All,
    /// Deny every call that waits.
    None,
}

/// Answers the run's waiting calls one at a time, in the order they started waiting.
pub struct Approver {
    asks: mpsc::UnboundedSender<WaitingCall>,
}

impl Approver {
    /// Starts answering the calls of `handle`'s session as `approve` says.
    pub fn start(approve: Approve, sessions: Sessions, session_id: String) -> Approver {
        let (asks, mut waiting) = mpsc::unbounded_channel::<WaitingCall>();
        tokio::spawn(async move {
            while let Some(call) = waiting.recv().await {
                let call_id = call.call_id.clone();
                let answer = match approve {
                    Approve::All => CallAnswer::Approve { by: Some("cli".into()), arguments: None },
                    Approve::None => deny("airlock run --approve none denies every call"),
                    Approve::Ask => match tokio::task::spawn_blocking(move || ask(&call)).await {
                        Ok(answer) => answer,
                        Err(_) => deny("asking on the terminal failed"),
                    },
                };
                // Refused when the run was cancelled meanwhile: nothing waits any more.
                let answered = sessions.answer(&session_id, &call_id, answer).await;
                if let Err(InputError::Session(error)) = answered {
                    tracing::error!(session_id, %error, "answering the call failed");
                }
            }
        });
        Approver { asks }
    }

    /// Follows one update of the run: a call that starts waiting for approval is answered.
    pub fn follow(&self, update: &Update, handle: &SessionHandle) {
        let Update::Event(committed) = update else { return };
        if !committed.json.contains("\"type\":\"tool/approval\"") {
            return; // most events: not parsed at all
        }
        let Ok(Some(Event { data: EventData::ToolApproval(approval), .. })) =
            Event::parse(&committed.json)
        else {
            return;
        };
        if approval.state != ApprovalState::Requested {
            return;
        }
        // The waiting calls change with the commit that logs the request.
        let waiting = handle.view().waiting();
        if let Some(call) = waiting.into_iter().find(|c| c.call_id == approval.call_id) {
            let _ = self.asks.send(call); // the answering task lives as long as the run
        }
    }
}

fn deny(reason: &str) -> CallAnswer {
    CallAnswer::Deny { reason: Some(reason.to_owned()), by: Some("cli".into()) }
}

/// Asks on stderr and reads the answer from stdin.
fn ask(call: &WaitingCall) -> CallAnswer {
    eprint!("airlock: run {} {}? [y/N] ", call.name, call.arguments);
    let _ = std::io::stderr().flush();
    let mut line = String::new();
    match std::io::stdin().lock().read_line(&mut line) {
        Ok(0) | Err(_) => {
            eprintln!();
            deny("nobody answered: stdin ended before a y or n")
        }
        Ok(_) if matches!(line.trim(), "y" | "Y" | "yes") => {
            CallAnswer::Approve { by: Some("cli".into()), arguments: None }
        }
        Ok(_) => deny("the person answered no"),
    }
}
