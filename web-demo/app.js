// The Airlock web demo: a browser client of the gateway's HTTP/SSE API, nothing else.
//
// The session list comes from `GET /v1/sessions` and stays current through `GET /v1/events`.
// A session's conversation is rendered only from its log, streamed by `EventSource` from
// `GET /v1/sessions/{id}/events`: the browser resumes with `Last-Event-ID` after a drop, and an
// event whose seq was rendered already is skipped, so no text shows twice. Reloading the page
// replays the same log into the same view.
//
// A gateway with API keys answers 401 until the page signs in: the key typed into the sign-in
// form goes once to `POST /v1/login`, which sets it as an HttpOnly cookie; every later request
// and event stream carries that cookie, and the script never keeps the key.
//
// `/compact` typed alone in the composer is a command, not a message: it asks the gateway to
// summarize the conversation so far (`POST /v1/sessions/{id}/compact`). Its result comes back on
// the log as a `context/compaction` event, shown as a folded summary; the messages above it stay,
// since only the model forgets them.

const $ = (selector) => document.querySelector(selector);

const state = {
  sessions: new Map(), // id -> status
  current: null, // the selected session id
  stream: null, // its EventSource
  lastSeq: -1, // the last event rendered
  turn: null, // the element of the running turn's streaming answer
  reasoning: null,
  tools: new Map(), // callId -> element
};

async function api(method, path, body) {
  const response = await fetch(path, {
    method,
    headers: body === undefined ? {} : { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  const json = text ? JSON.parse(text) : null;
  if (response.status === 401) showSignIn(json?.error?.message);
  if (!response.ok) {
    const error = json?.error;
    throw new Error(error ? `${error.code}: ${error.message}` : `HTTP ${response.status}`);
  }
  return json;
}

function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function textOf(content) {
  return (content || [])
    .filter((block) => block.type === "text")
    .map((block) => block.text)
    .join("");
}

// ---- the session list ----

function renderSessions() {
  const list = $("#sessions");
  list.replaceChildren();
  for (const [id, status] of state.sessions) {
    const item = element("li");
    item.dataset.sessionId = id;
    item.title = id;
    item.setAttribute("aria-current", String(id === state.current));
    const dot = element("span", "dot");
    dot.dataset.status = status;
    item.append(dot, element("span", "", id));
    item.addEventListener("click", () => select(id));
    list.append(item);
  }
}

async function loadSessions() {
  let cursor = null;
  do {
    const query = cursor ? `?cursor=${encodeURIComponent(cursor)}` : "";
    const page = await api("GET", `/v1/sessions${query}`);
    for (const session of page.items) {
      if (!session.disposed) state.sessions.set(session.sessionId, session.status);
    }
    cursor = page.nextCursor;
  } while (cursor);
  renderSessions();
}

function followHub() {
  const hub = new EventSource("/v1/events");
  const connection = $("#connection");
  hub.onopen = () => {
    connection.dataset.state = "open";
    connection.textContent = "connected";
  };
  hub.onerror = () => {
    connection.dataset.state = "closed";
    connection.textContent = "reconnecting…";
  };
  hub.addEventListener("session.added", (event) => {
    const { sessionId } = JSON.parse(event.data);
    if (!state.sessions.has(sessionId)) state.sessions.set(sessionId, "idle");
    renderSessions();
  });
  hub.addEventListener("session.removed", (event) => {
    state.sessions.delete(JSON.parse(event.data).sessionId);
    renderSessions();
  });
  hub.addEventListener("session.status", (event) => {
    const { sessionId, status } = JSON.parse(event.data);
    state.sessions.set(sessionId, status);
    renderSessions();
  });
}

// ---- one session ----

function select(id) {
  if (state.stream) state.stream.close();
  Object.assign(state, { current: id, lastSeq: -1, turn: null, reasoning: null, tools: new Map() });
  history.replaceState(null, "", `#${encodeURIComponent(id)}`);
  $("#session-title").textContent = id;
  $("#conversation").replaceChildren();
  renderQueue([]);
  for (const control of ["#message", "#delivery", "#send"]) $(control).disabled = false;
  renderSessions();
  $("#message").focus();

  const stream = new EventSource(`/v1/sessions/${encodeURIComponent(id)}/events`);
  state.stream = stream;
  stream.addEventListener("session.event", (frame) => {
    const event = JSON.parse(frame.data);
    if (event.seq <= state.lastSeq) return; // resumed streams never repeat, but be sure
    state.lastSeq = event.seq;
    renderEvent(event);
  });
  stream.addEventListener("session.status", (frame) => setStatus(JSON.parse(frame.data).status));
  stream.addEventListener("session.queue", (frame) => renderQueue(JSON.parse(frame.data).items));
  stream.onerror = () => {
    $("#connection").dataset.state = "closed";
    $("#connection").textContent = "reconnecting…";
  };
  stream.onopen = () => {
    $("#connection").dataset.state = "open";
    $("#connection").textContent = "connected";
  };
}

function setStatus(status) {
  const badge = $("#session-status");
  badge.dataset.status = status;
  badge.textContent = status;
  if (state.current) state.sessions.set(state.current, status);
  renderSessions();
}

function append(node) {
  const conversation = $("#conversation");
  const atBottom =
    conversation.scrollHeight - conversation.scrollTop - conversation.clientHeight < 40;
  conversation.append(node);
  if (atBottom) conversation.scrollTop = conversation.scrollHeight;
  return node;
}

function streamingAnswer() {
  if (!state.turn) {
    state.turn = append(element("div", "msg assistant streaming"));
    state.turn.dataset.role = "assistant";
  }
  return state.turn;
}

function renderEvent(event) {
  const data = event.data;
  switch (event.type) {
    case "user/message": {
      const bubble = element("div", "msg user");
      bubble.dataset.role = "user";
      const kind = data.source?.delivery && data.source.delivery !== "followup"
        ? data.source.delivery
        : data.source?.kind !== "user" ? data.source?.kind : null;
      if (kind) bubble.append(element("span", "label", kind));
      bubble.append(document.createTextNode(textOf(data.content)));
      append(bubble);
      break;
    }
    case "assistant/chunk": {
      const chunk = data.chunk;
      if (chunk.type === "text-delta") {
        streamingAnswer().append(document.createTextNode(chunk.text));
      } else if (chunk.type === "reasoning-delta") {
        if (!state.reasoning) {
          state.reasoning = append(element("details", "reasoning"));
          state.reasoning.append(element("summary", "", "reasoning"));
        }
        state.reasoning.append(document.createTextNode(chunk.text));
      }
      break;
    }
    case "assistant/message": {
      // The committed message replaces what streamed (the same text, now final).
      const text = textOf(data.message.content);
      const bubble = state.turn;
      state.turn = null;
      state.reasoning = null;
      if (!text && !bubble) break;
      const final = bubble || append(element("div", "msg assistant"));
      final.dataset.role = "assistant";
      final.classList.remove("streaming");
      final.textContent = text;
      if (data.interrupted) final.classList.add("interrupted");
      break;
    }
    case "tool/call": {
      const card = append(element("div", "tool"));
      card.append(element("code", "", `→ ${data.name}`), element("pre", "args", data.arguments));
      state.tools.set(data.callId, card);
      break;
    }
    case "tool/result": {
      const block = data.message.content[0] || {};
      const card = state.tools.get(block.toolCallId) || append(element("div", "tool"));
      const result = element("pre", "result", `← ${textOf(block.content)}`);
      if (data.error) {
        card.classList.add("failed");
        result.textContent = `← ${data.error.code}: ${textOf(block.content)}`;
      }
      card.append(result);
      break;
    }
    case "turn/end": {
      settleStreaming();
      const reason = data.reason.kind;
      const line = append(element("div", "turn-end", `turn ${data.turn}: ${reason}`));
      line.dataset.kind = reason;
      if (data.reason.error) line.textContent += ` (${data.reason.error.code})`;
      break;
    }
    case "goal/change": {
      const goal = data.goal;
      const why = goal && (goal.paused || goal.blocked);
      const text = goal ? `goal ${goal.phase}: ${goal.objective}${why ? ` (${why.message})` : ""}` : "goal cleared";
      append(element("div", "note", text));
      break;
    }
    case "context/compaction":
      settleStreaming(); // the chunks before it belong to a request the compaction ended
      append(compactionBlock(data));
      break;
    case "subagent/descriptor":
      append(element("div", "note", `subagent of ${data.parentSessionId}`));
      break;
    default:
      break;
  }
}

// Chunks of a message that never committed stay as they streamed; later text gets a new bubble.
function settleStreaming() {
  if (state.turn) state.turn.classList.remove("streaming");
  state.turn = null;
  state.reasoning = null;
}

const TRIGGERS = { manual: "manual", pressure: "context pressure", overflow: "context overflow" };

function tokens(count) {
  return Number(count).toLocaleString("en-US");
}

// A compaction folded: the head says what happened and why, the body is the summary the model
// now reads instead of everything above it (model text, so set as text, never as HTML).
function compactionBlock(data) {
  const block = element("details", "compaction");
  block.dataset.trigger = data.trigger;
  block.dataset.throughSeq = data.throughSeq;
  let meta = `(${TRIGGERS[data.trigger] || data.trigger})`;
  if (data.tokensAfter != null) {
    meta += ` · ${tokens(data.tokensBefore)} → ${tokens(data.tokensAfter)} tokens`;
  } else if (data.tokensBefore != null) {
    meta += ` · ${tokens(data.tokensBefore)} tokens`;
  }
  const head = element("summary", "", "Earlier conversation summarized");
  head.append(element("span", "meta", ` ${meta}`));
  // The heading says what the core's framing line says to the model; the body is the summary.
  const text = textOf(data.summary?.content).replace(/^Summary of the earlier conversation[^\n]*\n+/, "");
  block.append(head, element("div", "text", text));
  return block;
}

function renderQueue(items) {
  const list = $("#queue-items");
  list.replaceChildren();
  $("#queue").hidden = items.length === 0;
  for (const item of items) {
    const row = element("li");
    row.dataset.messageId = item.messageId;
    row.append(
      element("span", "kind", item.delivery),
      element("span", "text", textOf(item.message?.content)),
    );
    const path = `/v1/sessions/${encodeURIComponent(state.current)}/queue/${encodeURIComponent(item.messageId)}`;
    const button = (label, action) => {
      const b = element("button", "", label);
      b.type = "button";
      b.addEventListener("click", () => action().catch(report));
      return b;
    };
    if (item.target === "next-turn") {
      row.append(button("Steer", () => api("POST", `${path}/steer`)));
    }
    row.append(
      button("Edit", async () => {
        const text = prompt("New text", textOf(item.message?.content));
        if (text !== null) await api("PATCH", path, { content: text });
      }),
      button("Remove", () => api("DELETE", path)),
    );
    list.append(row);
  }
}

function report(error) {
  append(element("div", "note", String(error.message || error)));
}

async function send() {
  const box = $("#message");
  const text = box.value.trim();
  if (!text || !state.current) return;
  box.value = "";
  if (text === "/compact") return compact(text);
  const delivery = $("#delivery").value;
  await api("POST", `/v1/sessions/${encodeURIComponent(state.current)}/messages`, {
    content: text,
    delivery,
  }).catch((error) => {
    box.value = text;
    report(error);
  });
}

// The 202 says only that a compaction started; its block arrives with the event. A refusal
// (the session is running, has nothing to compact, or is compacting already) is reported, and
// the command stays in the box to try again.
async function compact(typed) {
  await api("POST", `/v1/sessions/${encodeURIComponent(state.current)}/compact`, {})
    .catch((error) => {
      $("#message").value = typed;
      report(error);
    });
}

async function cancel(keepInbox) {
  if (!state.current) return;
  await api("POST", `/v1/sessions/${encodeURIComponent(state.current)}/cancel`, { keepInbox })
    .catch(report);
}

// ---- wiring ----

$("#composer").addEventListener("submit", (event) => {
  event.preventDefault();
  send();
});
$("#message").addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey) {
    event.preventDefault();
    send();
  }
});
document.addEventListener("keydown", (event) => {
  if (event.key === "Escape") cancel(true);
});
$("#cancel").addEventListener("click", () => cancel(true));
$("#cancel-clear").addEventListener("click", () => cancel(false));
$("#new-session").addEventListener("click", async () => {
  const session = await api("POST", "/v1/sessions", {}).catch(report);
  if (!session) return;
  state.sessions.set(session.sessionId, session.status);
  select(session.sessionId);
});

// ---- signing in ----

function showSignIn(why) {
  $("#sign-in").hidden = false;
  $("#sign-in-why").textContent = why || "";
  $("#key").focus();
}

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
    await loadSessions();
  } catch (error) {
    if ($("#sign-in").hidden) report(error);
    return;
  }
  followHub();
  api("POST", "/v1/login").then(showIdentity).catch(report);
  const wanted = decodeURIComponent(location.hash.slice(1));
  if (wanted && state.sessions.has(wanted)) select(wanted);
}

start();
