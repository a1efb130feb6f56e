// The session list: every session the key may see, newest first, each titled and shown with the
// time it was made, with its children (subagents) nested under it. A session is titled by the
// title a person gave it (its `metadata.title`, set by `rename`), else a subagent by the name its
// parent's model gave it (`metadata.name`), else by its first user message as plain text
// (js/markdown.js `titleOf`).
//
// It comes from `GET /v1/sessions` and stays current through `GET /v1/events` (added, removed,
// status). A title is read once from the start of the session's log (`GET …/events/page`); a
// session with no message yet is asked again when its status next changes.

import { $, api, button, element, sessionLink, sessionPath, state, textOf, when } from "./api.js";
import { titleOf } from "./markdown.js";

const sessions = new Map(); // id -> {id, status, parent, createdAt, model, forkedFrom, metadata, name, title}
const listeners = new Set();

// Calls `listener(id)` whenever what the list knows about a session changed.
export function onChange(listener) {
  listeners.add(listener);
}

function changed(id) {
  render();
  for (const listener of listeners) listener(id);
}

export function get(id) {
  return sessions.get(id);
}

// How a session is named: the title a person gave it, a subagent's name, else the words of its
// first message, or "New session" until it has one.
export function nameOf(id) {
  const session = sessions.get(id);
  return session?.name || session?.title || (session ? "New session" : id);
}

// Adds or updates a session from its `Session` view.
export function upsert(view) {
  if (keep(view)) changed(view.sessionId);
}

// `upsert` without telling anyone (a whole page of sessions is drawn once).
function keep(view) {
  if (view.disposed) return false;
  const known = sessions.get(view.sessionId);
  sessions.set(view.sessionId, {
    id: view.sessionId,
    status: view.status,
    parent: view.parentSessionId || null,
    createdAt: view.createdAt,
    model: view.model,
    forkedFrom: view.forkedFrom || null,
    metadata: view.metadata ?? null,
    name: [view.metadata?.title, view.metadata?.name].find((n) => typeof n === "string" && n.trim()) || null,
    title: known?.title || null,
  });
  if (!known?.title && !sessions.get(view.sessionId).name) wantTitle(view.sessionId);
  return true;
}

export function setStatus(id, status) {
  const session = sessions.get(id);
  if (!session || session.status === status) return;
  session.status = status;
  if (!session.title && !session.name) wantTitle(id); // a message arrived, or a turn ended
  changed(id);
}

export function remove(id) {
  if (sessions.delete(id)) changed(id);
}

// The open session's stream saw a user message: a session without a title takes it.
export function sawMessage(id, content) {
  const session = sessions.get(id);
  const title = titleOf(textOf(content));
  if (!session || session.title || !title) return;
  session.title = title;
  changed(id);
}

// The newest status each session's live updates gave, numbered in the order they came: a
// session view read before that number is older than it, so its status gives way.
const heard = new Map(); // id -> {number, status}
let updates = 0;
const learning = new Set();

function heardStatus(id, status) {
  heard.set(id, { number: ++updates, status });
  if (sessions.has(id)) setStatus(id, status);
  else learn(id).catch(() => {});
}

// `view`, read after `asked` updates, with the status of any update heard after those.
function fresher(view, asked) {
  const newer = heard.get(view.sessionId);
  return newer?.number > asked ? { ...view, status: newer.status } : view;
}

// Fetches one session the list does not know yet (a new one, or a child just started).
export async function learn(id) {
  if (sessions.has(id) || learning.has(id)) return;
  learning.add(id);
  const asked = updates;
  try {
    upsert(fresher(await api("GET", sessionPath(id)), asked));
  } finally {
    learning.delete(id);
  }
}

export async function load() {
  const asked = updates;
  const seen = new Set();
  let cursor = null;
  do {
    const query = cursor ? `?cursor=${encodeURIComponent(cursor)}` : "";
    const page = await api("GET", `/v1/sessions${query}`);
    for (const view of page.items) {
      seen.add(view.sessionId);
      keep(fresher(view, asked));
    }
    cursor = page.nextCursor;
  } while (cursor);
  const gone = [...sessions.keys()].filter((id) => !seen.has(id));
  for (const id of gone) sessions.delete(id);
  render();
  for (const id of gone) for (const listener of listeners) listener(id);
}

// ---- titles, a few requests at a time ----

const wanted = [];
let fetching = 0;

function wantTitle(id) {
  if (!wanted.includes(id)) wanted.push(id);
  while (fetching < 4 && wanted.length) fetchTitle(wanted.shift());
}

async function fetchTitle(id) {
  fetching += 1;
  try {
    const page = await api("GET", sessionPath(id, "/events/page?limit=50"));
    const first = page.events.find((event) => event.type === "user/message");
    const session = sessions.get(id);
    if (first && session && !session.title) {
      session.title = titleOf(textOf(first.data.content)) || "(empty message)";
      changed(id);
    }
  } catch {
    // Gone, or not ours any more: the list's own updates say so.
  } finally {
    fetching -= 1;
    if (wanted.length) wantTitle(wanted.shift());
  }
}

// ---- drawing ----

// Draws the list; with words in the search box, only the sessions whose name has them (and the
// parents they are nested under).
export function render() {
  const list = $("#sessions");
  const focused = document.activeElement?.closest?.("#sessions a")?.dataset.sessionId;
  const children = new Map(); // parent id (or null) -> sessions
  for (const session of sessions.values()) {
    const parent = session.parent && sessions.has(session.parent) ? session.parent : null;
    if (!children.has(parent)) children.set(parent, []);
    children.get(parent).push(session);
  }
  const query = $("#session-search").value.trim().toLowerCase();
  const matches = (session) => !query || nameOf(session.id).toLowerCase().includes(query);
  const items = (parent, depth) =>
    (children.get(parent) || [])
      .sort((a, b) => (depth === 0 ? b.createdAt - a.createdAt : a.createdAt - b.createdAt))
      .map((session) => {
        const nested = items(session.id, depth + 1);
        return matches(session) || nested.length ? item(session, nested) : null;
      })
      .filter(Boolean);
  const top = items(null, 0);
  const none = query ? "No session matches" : "No sessions yet";
  list.replaceChildren(...(top.length ? top : [element("li", "empty", none)]));
  if (focused) list.querySelector(`a[data-session-id="${CSS.escape(focused)}"]`)?.focus();
}

function item(session, children) {
  const row = element("li");
  row.dataset.sessionId = session.id;
  const link = sessionLink(session.id, "", "session");
  link.title = session.id;
  if (session.id === state.current) link.setAttribute("aria-current", "page");
  const dot = element("span", "dot");
  dot.dataset.status = session.status;
  const meta = element("span", "meta", `${when(session.createdAt)} · `);
  meta.append(element("span", "state", session.status));
  link.append(dot, element("span", "name", nameOf(session.id)), meta);
  const dispose = button("", () => disposeSession(session.id), `Dispose “${nameOf(session.id)}”`);
  dispose.className = "dispose";
  dispose.setAttribute("aria-label", `Dispose ${nameOf(session.id)}`);
  row.append(link, dispose);
  if (children.length) {
    const nested = element("ul", "children");
    nested.setAttribute("aria-label", `Subagents of ${nameOf(session.id)}`);
    nested.append(...children);
    row.append(nested);
  }
  return row;
}

// Gives a session `title` (empty: none, so it is named as before), kept in its metadata with
// whatever else is there; a refusal throws.
export async function rename(id, title) {
  const metadata = { ...(sessions.get(id)?.metadata || {}) };
  if (title.trim()) metadata.title = title.trim();
  else delete metadata.title;
  const view = await api("PATCH", sessionPath(id), { metadata: Object.keys(metadata).length ? metadata : null });
  upsert(view);
}

// Disposes a session after asking; the list drops it when the gateway says it is gone.
export async function disposeSession(id) {
  const name = nameOf(id);
  if (!confirm(`Dispose “${name}”? Its turn and queue are canceled and it takes no more input; its log stays readable.`)) return;
  await api("DELETE", sessionPath(id)).catch((error) => alert(`Dispose failed: ${error.message}`));
}

$("#session-search").addEventListener("input", render);

// ---- live updates ----

// Follows `GET /v1/events`; after a dropped connection the list is read again, since the
// stream has no snapshot and what happened meanwhile is not replayed.
export function followHub(connection) {
  const hub = new EventSource("/v1/events");
  let dropped = false;
  hub.onopen = () => {
    connection("open");
    if (dropped) load().catch(() => {});
    dropped = false;
  };
  hub.onerror = () => {
    connection("closed");
    dropped = true;
  };
  hub.addEventListener("session.added", (frame) => {
    learn(JSON.parse(frame.data).sessionId).catch(() => {});
  });
  hub.addEventListener("session.removed", (frame) => remove(JSON.parse(frame.data).sessionId));
  hub.addEventListener("session.status", (frame) => {
    const { sessionId, status } = JSON.parse(frame.data);
    heardStatus(sessionId, status);
  });
}
