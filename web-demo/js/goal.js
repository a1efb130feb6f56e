// The goal panel of the selected session: its objective, the round it is on, its phase and why
// it stopped; set, pause, resume, complete and clear through the goal routes.
//
// What it shows is the goal view (the goal plus whether rounds run in this process), read from
// the session (`GET /v1/sessions/{id}`) when it opens and again after each `goal/change` event
// on its stream, one read at a time, and from the answer of each request the panel makes. An
// answer is shown only if no request started later was shown already, so a slow read never
// puts back what a newer answer replaced.

import { $, api, sessionPath, state } from "./api.js";
import { report } from "./conversation.js";

let goal = null; // the goal view, or null when the session has none
let reading = false; // a read is under way
let stale = false; // an event came after that read began
let started = 0; // requests started, reads and changes alike
let shown = 0; // the number of the request whose answer is shown

// Sends a request and shows its answer (`pick` takes the goal view from it), unless a request
// started later was shown first or another session was selected meanwhile.
async function ask(pick, method, path, body) {
  const session = state.current;
  const number = ++started;
  const view = pick(await api(method, path, body));
  if (session !== state.current || number < shown) return;
  shown = number;
  goal = view;
  render();
}

// Shows the panel for the selected session (hidden when there is none) and reads its goal.
export function open() {
  goal = null;
  render();
  refresh();
}

// Reads the goal again; a call while a read is under way makes one more read after it.
export async function refresh() {
  if (reading) {
    stale = true;
    return;
  }
  const session = state.current;
  if (!session) return;
  reading = true;
  try {
    // The session's view carries the same goal view as `GET …/goal`, and answers 200 when
    // there is none (a 404 would be an error in the browser's console for a normal state).
    await ask((view) => view.goal || null, "GET", sessionPath(session));
  } catch (error) {
    report(error);
  } finally {
    reading = false;
    if (stale) {
      stale = false;
      refresh();
    }
  }
}

export function render() {
  $("#goal").hidden = !state.current;
  $("#goal-view").hidden = !goal;
  $("#goal-form").hidden = Boolean(goal);
  const live = Boolean(state.current) && !state.disposed;
  for (const control of $("#goal-form").elements) control.disabled = !live;
  if (!goal) {
    for (const control of $("#goal-view").querySelectorAll("button")) control.disabled = true;
    return;
  }
  $("#goal-objective").textContent = goal.objective;
  $("#goal-objective").title = goal.objective;
  const phase = $("#goal-phase");
  phase.dataset.phase = goal.phase;
  phase.textContent = goal.phase === "active" && !goal.armed ? "active, not running" : goal.phase;
  $("#goal-rounds").textContent = `round ${goal.roundsStarted}/${goal.maxRounds}`;
  // Why it stopped, or why its next round waits (its tenant's quota, the session's budget).
  const why = goal.blocked || goal.paused || goal.waiting;
  const reason = $("#goal-reason");
  reason.textContent = why
    ? `${why.code}: ${why.message}`
    : goal.phase === "active" && !goal.armed ? "resume to run its rounds here" : "";
  reason.title = reason.textContent;
  const can = {
    "#goal-pause": goal.phase === "active",
    "#goal-resume": goal.phase === "paused" || (goal.phase === "active" && !goal.armed),
    "#goal-complete": goal.phase !== "complete",
    "#goal-clear": true,
  };
  for (const [selector, allowed] of Object.entries(can)) $(selector).disabled = !live || !allowed;
}

// Runs a goal request; its answer (the new view, or none for a clear) is shown at once.
async function change(method, rest, body) {
  const path = sessionPath(state.current, `/goal${rest}`);
  await ask((view) => view, method, path, body).catch(report);
}

$("#goal-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const objective = $("#goal-input").value.trim();
  const maxRounds = Number($("#goal-rounds-input").value);
  if (!objective || !state.current) return;
  await change("PUT", "", { objective, maxRounds });
  if (goal) $("#goal-input").value = "";
});
$("#goal-pause").addEventListener("click", () => change("POST", "/pause"));
$("#goal-resume").addEventListener("click", () => change("POST", "/resume"));
$("#goal-complete").addEventListener("click", () => change("POST", "/complete"));
$("#goal-clear").addEventListener("click", () => change("DELETE", ""));
