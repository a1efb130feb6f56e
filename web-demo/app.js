// The Airlock web demo: a browser client of the gateway's HTTP/SSE API, nothing else.
//
// The session list (js/sessions.js) comes from `GET /v1/sessions` and stays current through
// `GET /v1/events`. A session's conversation (js/conversation.js) is rendered only from its log,
// streamed by `EventSource` from `GET /v1/sessions/{id}/events`: the browser resumes with
// `Last-Event-ID` after a drop, and an event whose seq was rendered already is skipped, so no
// text shows twice. Reloading the page replays the same log into the same view. The selected
// session is the page's hash, so links to sessions (a subagent's parent or child) are plain
// links, and back and forward move between sessions.
//
// A gateway with API keys answers 401 until the page signs in: the key typed into the sign-in
// form goes once to `POST /v1/login`, which answers with a sign-in token in an HttpOnly cookie
// (never the key itself); every later request and event stream carries that cookie, the script
// never keeps the key, and "Sign out" ends the sign-in on the gateway.
//
// A call that waits for a person shows Approve / Deny on its card, a question of the model
// (`ask_user`, a client tool this page declares on its sessions) a box for the answer, and every
// message a "fork from here" action (js/person.js).
//
// A session with a budget shows it in the header (`GET …/budget`), with "paused: budget spent"
// once its spend reached it; "raise" opens a small form that replaces the budget
// (`PATCH …/budget`), and a paused session resumes where it stopped. The log's
// `budget/exhausted` and `budget/resumed` events are drawn in the conversation.
//
// With no session selected, typing into the composer starts one. A continuable subagent's
// composer only steers its running turn: its parent alone gives it work. Below 640 px the session
// list slides in over the conversation ("Sessions" in the header).
//
// `/compact` typed alone in the composer is a command, not a message: it asks the gateway to
// summarize the conversation so far (`POST /v1/sessions/{id}/compact`). Its result comes back on
// the log as a `context/compaction` event, shown as a folded summary; the messages above it stay,
// since only the model forgets them.

import {
  $,
  api,
  count,
  dollars,
  limitsText,
  onUnauthorized,
  sessionLink,
  sessionPath,
  state,
  when,
} from "./js/api.js";
import * as attachments from "./js/attachments.js";
import * as conversation from "./js/conversation.js";
import * as files from "./js/files.js";
import * as goal from "./js/goal.js";
import * as person from "./js/person.js";
import * as schedules from "./js/schedules.js";
import { applySplice, setQueue } from "./js/queue.js";
import * as sessions from "./js/sessions.js";

const { report } = conversation;

let stream = null; // the selected session's EventSource
let lastSeq = -1; // the last event rendered

function connection(open) {
  const badge = $("#connection");
  badge.dataset.state = open;
  badge.textContent = open === "open" ? "connected" : "reconnecting…";
}

// ---- one session ----

function select(id, { disposed = false } = {}) {
  if (stream) stream.close();
  Object.assign(state, { current: id, status: null, disposed, child: false });
  showNav(false);
  lastSeq = -1;
  if (decodeURIComponent(location.hash.slice(1)) !== id) {
    history.pushState(null, "", `#${encodeURIComponent(id)}`);
  }
  $("#main").dataset.sessionId = id;
  conversation.reset();
  setQueue([]);
  files.refresh();
  schedules.refresh();
  showHeader();
  setStatus(disposed ? "disposed" : null);
  goal.open();
  closeRename();
  sessions.render();
  if (!disposed) $("#message").focus();

  const source = new EventSource(sessionPath(id, "/events"));
  stream = source;
  source.addEventListener("session.event", (frame) => {
    const event = JSON.parse(frame.data);
    if (event.seq <= lastSeq) return; // resumed streams never repeat, but be sure
    lastSeq = event.seq;
    conversation.render(event);
    if (event.type === "agent/inbox/spliced") applySplice(event.data);
    if (event.type === "user/message") sessions.sawMessage(id, event.data.content);
    if (event.type === "subagent/descriptor" && event.data.continuable) {
      state.child = true; // its parent's work only: the composer can but steer its turn
      updateControls();
    }
    if (event.type === "goal/change") goal.refresh();
    if (event.type === "context/compaction") showUsage(id);
    if (event.type === "budget/exhausted" || event.type === "budget/resumed") showBudget(id);
  });
  source.addEventListener("session.status", (frame) => {
    const { status } = JSON.parse(frame.data);
    if (!state.disposed) setStatus(status);
    if (status === "idle") {
      showUsage(id);
      showBudget(id);
    }
  });
  source.addEventListener("session.queue", (frame) => setQueue(JSON.parse(frame.data).items));
  source.addEventListener("subagent.started", (frame) => {
    sessions.learn(JSON.parse(frame.data).childSessionId).catch(() => {});
  });
  source.onerror = () => {
    // A disposed session's stream sends the rest of its log and ends: nothing to resume.
    if (state.disposed) source.close();
    else connection("closed");
  };
  source.onopen = () => connection("open");
}

// The header: the session's title and when it was made, its parent for a subagent, the session
// it was forked from for a fork (an edit's or a regeneration's old branch), its model, its id.
function showHeader() {
  const id = state.current;
  const session = sessions.get(id);
  $("#session-title").textContent = sessions.nameOf(id);
  const parent = $("#session-parent");
  parent.replaceChildren();
  if (session?.parent) {
    parent.append("subagent of ", sessionLink(session.parent, sessions.nameOf(session.parent), "parent-link"), " · ");
  }
  const source = session?.forkedFrom?.sessionId;
  if (source) parent.append("fork of ", sessionLink(source, sessions.nameOf(source), "fork-link"), " · ");
  $("#session-model").textContent = session?.model ? `${session.model} ·` : "";
  $("#session-id").textContent = session ? `${when(session.createdAt)} · ${id}` : id;
  document.title = `${sessions.nameOf(id)} · Airlock`;
  $("#session-usage").textContent = "";
  showUsage(id);
  if (budget.id !== id) renderBudget(id, null);
  showBudget(id);
}

// What the session's responses used so far: tokens in and out, and dollars where priced.
async function showUsage(id) {
  const spent = await api("GET", sessionPath(id, "/usage")).catch(() => null);
  if (!spent || state.current !== id) return;
  const { inputTokens, outputTokens, cacheReadTokens } = spent.usage;
  const count = (n) => n.toLocaleString("en");
  let text = `· ${count(inputTokens)} in · ${count(outputTokens)} out`;
  if (cacheReadTokens > 0) text += ` (${count(cacheReadTokens)} cached)`;
  if (spent.costUsd > 0) text += ` · $${spent.costUsd.toFixed(4)}${spent.estimate ? " est." : ""}`;
  $("#session-usage").textContent = text;
}

// ---- its budget ----

const budget = {
  id: null, // the session the header's budget is of
  view: null, // its BudgetState ({budget, spent, paused}), or null before the first answer
  started: 0, // requests started, reads and changes alike
  shown: 0, // the number of the request whose answer is shown
};

// Reads the budget (or changes it, with `PATCH` and a body) and shows the answer, unless a
// request started later was shown first (a slow read never puts back what a change answered) or
// another session was selected meanwhile. Answers the BudgetState; a failure throws.
async function askBudget(id, method = "GET", body) {
  const number = ++budget.started;
  const view = method === "GET"
    ? await readBudget(id)
    : await api(method, sessionPath(id, "/budget"), body);
  if (state.current === id && number > budget.shown) {
    budget.shown = number;
    renderBudget(id, view);
  }
  return view;
}

function showBudget(id) {
  askBudget(id).catch(() => {}); // the header stays as it was
}

// The session's view says whether it has a budget and is paused; only then is `GET …/budget`
// asked what it spent. So a session without a budget is not woken for it, and a disposed one
// (which that route refuses, 409) shows its limits without the spend.
async function readBudget(id) {
  const session = await api("GET", sessionPath(id));
  if (session.budget && !session.disposed) return api("GET", sessionPath(id, "/budget"));
  return { budget: session.budget || null, spent: null, paused: Boolean(session.paused) };
}

// The header's budget: nothing for a session without one; its limits, and "paused: budget
// spent" while it holds the session. When the session pauses, the form to raise it opens.
function renderBudget(id, view) {
  const before = budget.id === id ? budget.view : null;
  Object.assign(budget, { id, view });
  const limits = view?.budget;
  const paused = Boolean(limits && view.paused);
  const span = $("#session-budget");
  span.dataset.paused = String(paused);
  span.textContent = limits ? budgetLine(view) : "";
  $("#budget").hidden = !limits;
  $("#budget-raise").hidden = state.disposed;
  const form = $("#budget-form");
  // Shown afresh (another session, or its first answer): closed unless paused.
  if (!limits || state.disposed || (!before && !paused)) form.hidden = true;
  if (paused && !before?.paused && !state.disposed) openBudgetForm();
  updateControls();
}

// "budget 10,000 tokens · spent 12,345 tokens · paused: budget spent"
function budgetLine({ budget: limits, spent, paused }) {
  let text = `budget ${limitsText(limits)}`;
  if (spent) text += ` · spent ${count(spent.tokens)} tokens`;
  if (spent?.costUsd > 0) text += `, ${dollars(spent.costUsd)}`;
  if (paused) text += " · paused: budget spent";
  return text;
}

// The form, filled with the budget's limits (an empty field is no limit of that kind).
function openBudgetForm() {
  const limits = budget.view?.budget || {};
  $("#budget-tokens").value = limits.tokens ?? "";
  $("#budget-cost").value = limits.costUsd ?? "";
  $("#budget-form").hidden = false;
}

// Replaces the budget with the form's limits. A paused session whose new budget is not spent
// resumes; one still spent stays paused, and the form stays open to raise it further.
async function setBudget() {
  const id = state.current;
  if (!id || state.disposed) return;
  const limit = (input) => (input.value.trim() === "" ? null : Number(input.value));
  const body = { tokens: limit($("#budget-tokens")), costUsd: limit($("#budget-cost")) };
  const view = await askBudget(id, "PATCH", body).catch(report);
  if (view && !view.paused && state.current === id) $("#budget-form").hidden = true;
}

function setStatus(status) {
  const badge = $("#session-status");
  badge.dataset.status = status || "none";
  badge.textContent = status || "";
  if (status && status !== "disposed") {
    state.status = status;
    sessions.setStatus(state.current, status);
  }
  updateControls();
}

// What the composer says it is for: starting a session, messaging one, or steering a subagent.
const PLACEHOLDER = {
  session: $("#message").placeholder,
  start: "Message the agent to start a new session (Enter sends)",
  child: "Only its parent gives this subagent work; while it runs, you may steer it",
};

// Every control is enabled exactly when it can act. With no session selected, the composer
// starts one; a continuable subagent takes only steering of its running turn from the page.
function updateControls() {
  const live = Boolean(state.current) && !state.disposed;
  const running = live && state.status === "running";
  const starting = !state.current;
  const typing = starting || (live && (!state.child || running));
  const message = $("#message");
  message.disabled = !typing;
  message.placeholder = starting ? PLACEHOLDER.start : state.child ? PLACEHOLDER.child : PLACEHOLDER.session;
  if (state.child) $("#delivery").value = "steer";
  $("#delivery").disabled = !live || state.child;
  $("#send").disabled = !typing || (!message.value.trim() && !attachments.count());
  $("#attach").disabled = !typing;
  $("#cancel").disabled = !running;
  $("#cancel-clear").disabled = !running;
  $("#dispose").disabled = !live;
  $("#rename").disabled = !state.current;
  $("#budget-raise").disabled = !live;
  for (const control of $("#budget-form").elements) control.disabled = !live;
  for (const b of $("#queue-items").querySelectorAll("button")) b.disabled = !live;
  goal.render();
}

sessions.onChange((id) => {
  if (!state.current) return;
  const session = sessions.get(state.current);
  if (id === state.current || id === session?.parent || id === session?.forkedFrom?.sessionId) showHeader();
  if (id === state.current && !session && !state.disposed) {
    // Removed from the list: disposed (here or elsewhere). The view stays, read-only.
    state.disposed = true;
    setStatus("disposed");
  }
});

// ---- acting on it ----

async function send() {
  const box = $("#message");
  const text = box.value.trim();
  const images = attachments.blocks();
  if ((!text && !images.length) || state.disposed) return;
  box.value = "";
  attachments.clear();
  updateControls();
  const restore = (error) => {
    box.value = text;
    updateControls();
    report(error);
  };
  if (text === "/compact" && !state.current) return restore("/compact needs a session: pick one first");
  if (text === "/compact") {
    // The 202 says only that a compaction started; its block arrives with the event. A refusal
    // (the session is running, has nothing to compact, or is compacting already) is reported,
    // and the command stays in the box to try again.
    await api("POST", sessionPath(state.current, "/compact"), {}).catch(restore);
    return;
  }
  // Typed with no session selected: the message starts one.
  if (!state.current && !(await newSession().catch(restore))) return;
  const delivery = $("#delivery").value;
  const content = images.length ? [...images, ...(text ? [{ type: "text", text }] : [])] : text;
  await api("POST", sessionPath(state.current, "/messages"), { content, delivery })
    .catch(restore);
}

async function cancel(keepInbox) {
  if (!state.current || state.disposed) return;
  await api("POST", sessionPath(state.current, "/cancel"), { keepInbox }).catch(report);
}

async function dispose() {
  if (!state.current || state.disposed) return;
  await sessions.disposeSession(state.current);
}

// Makes a session and shows it; answers it (a refusal throws).
async function newSession() {
  // The page runs `ask_user` itself: the model may ask the person a question.
  const body = { clientTools: person.CLIENT_TOOLS };
  const session = await api("POST", "/v1/sessions", body);
  opened(session);
  return session;
}

// A session the page made (new, or a fork): listed and shown.
function opened(session) {
  sessions.upsert(session);
  select(session.sessionId);
}
person.onForked(opened);

// ---- wiring ----

$("#composer").addEventListener("submit", (event) => {
  event.preventDefault();
  send();
});
$("#message").addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    send();
  }
});
$("#message").addEventListener("input", updateControls);
attachments.wire(report);
attachments.onChange(updateControls);
document.addEventListener("keydown", (event) => {
  if (event.key === "Escape" && !event.defaultPrevented) cancel(true);
});
$("#cancel").addEventListener("click", () => cancel(true));
$("#cancel-clear").addEventListener("click", () => cancel(false));
$("#dispose").addEventListener("click", dispose);
$("#rename").addEventListener("click", () => {
  $("#rename-input").value = sessions.get(state.current)?.metadata?.title || sessions.nameOf(state.current);
  $("#rename-form").hidden = false;
  $("#session-title").hidden = true;
  $("#rename-input").select();
});
function closeRename() {
  $("#rename-form").hidden = true;
  $("#session-title").hidden = false;
}
$("#rename-cancel").addEventListener("click", closeRename);
$("#rename-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const id = state.current;
  await sessions.rename(id, $("#rename-input").value).then(closeRename, report);
});
$("#budget-raise").addEventListener("click", () => {
  if ($("#budget-form").hidden) openBudgetForm();
  else $("#budget-form").hidden = true;
});
$("#budget-close").addEventListener("click", () => {
  $("#budget-form").hidden = true;
});
$("#budget-form").addEventListener("submit", (event) => {
  event.preventDefault();
  setBudget();
});
$("#new-session").addEventListener("click", () => newSession().catch(report));
// On a phone, the session list over the conversation ("Sessions"), or not.
function showNav(open) {
  document.body.dataset.nav = open ? "open" : "closed";
  $("#nav-toggle").setAttribute("aria-expanded", String(open));
}
$("#nav-toggle").addEventListener("click", () => {
  const open = document.body.dataset.nav !== "open";
  showNav(open);
  if (open) $("#sessions a, #new-session")?.focus();
});
window.addEventListener("hashchange", openFromHash); // a session link, back or forward

// Opens the session the hash names: a listed one, or a disposed one (read-only) if it exists.
async function openFromHash() {
  const wanted = decodeURIComponent(location.hash.slice(1));
  if (!wanted || wanted === state.current) return;
  if (sessions.get(wanted)) return select(wanted);
  const view = await api("GET", sessionPath(wanted)).catch(() => null);
  if (!view || wanted === state.current) return;
  sessions.upsert(view);
  select(wanted, { disposed: view.disposed });
}

// ---- signing in ----

function showSignIn(why) {
  $("#sign-in").hidden = false;
  $("#sign-in-why").textContent = why || "";
  $("#key").focus();
}
onUnauthorized(showSignIn);

$("#sign-in").addEventListener("submit", async (event) => {
  event.preventDefault();
  const key = $("#key").value.trim();
  const response = await fetch("/v1/login", {
    method: "POST",
    headers: { authorization: `Bearer ${key}` },
  });
  const body = await response.json().catch(() => null);
  if (!response.ok) {
    $("#sign-in-why").textContent = body?.error?.message || `HTTP ${response.status}`;
    return;
  }
  $("#key").value = "";
  $("#sign-in").hidden = true;
  start();
});

function showIdentity({ tenant }) {
  $("#sign-out").hidden = !tenant;
  $("#tenant").textContent = tenant ? `tenant ${tenant}` : "";
}

$("#sign-out").addEventListener("click", async () => {
  await fetch("/v1/logout", { method: "POST" });
  location.reload();
});

// The session list first: it tells whether the gateway wants a key before any stream opens.
async function start() {
  try {
    await sessions.load();
  } catch (error) {
    if ($("#sign-in").hidden) report(error);
    return;
  }
  sessions.followHub(connection);
  api("POST", "/v1/login").then(showIdentity).catch(report);
  await openFromHash();
  if (!state.current) $("#message").focus(); // typing starts a session
}

updateControls();
start();
