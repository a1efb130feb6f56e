// The conversation of the selected session, drawn only from its log's events, in seq order.
//
// Assistant text is Markdown: it is rendered as it streams (at most once a frame) and once more
// from the committed message. The view follows the newest event while the person is at the
// bottom (and from the moment a session opens); scrolling up stops that until they scroll back.

import { $, count, element, limitsText, sessionLink, spentText, textOf } from "./api.js";
import { TYPES as IMAGE_TYPES, dataUrl } from "./attachments.js";
import { CODE_TOOLS, codeCall, codeResult } from "./files.js";
import { renderMarkdown } from "./markdown.js";
import * as person from "./person.js";
import { nameOf, onChange } from "./sessions.js";

const box = $("#conversation");

const view = {
  turn: null, // the bubble of the answer streaming now
  text: "", // its text so far
  frame: 0, // the pending animation frame that renders it
  reasoning: null,
  tools: new Map(), // callId -> {card, name, args}
  stick: true, // follow the newest event
  ours: -1, // the scrollTop this script set last
  branch: null, // the turn drawn now: {atSeq} before its start, and `content` of its first message
};

// Forgets the shown session: an empty view that follows the newest event.
export function reset() {
  if (view.frame) cancelAnimationFrame(view.frame);
  Object.assign(view, { turn: null, text: "", frame: 0, reasoning: null, tools: new Map(), branch: null });
  view.stick = true;
  box.replaceChildren();
}

// ---- following the newest event ----

function atBottom() {
  return box.scrollHeight - box.scrollTop - box.clientHeight < 40;
}

// Scrolls to the newest event, unless the person scrolled away from it.
export function follow() {
  if (!view.stick) return;
  box.scrollTop = box.scrollHeight;
  view.ours = box.scrollTop;
}

box.addEventListener("scroll", () => {
  if (Math.abs(box.scrollTop - view.ours) < 2) return; // the scroll this script made
  view.stick = atBottom();
});
// The panels around it grow and shrink (the queue, the goal): keep the bottom in view.
new ResizeObserver(follow).observe(box);

function append(node) {
  box.append(node);
  return node;
}

// A line about something that went wrong, or that the person should know.
export function report(error) {
  append(element("div", "note", String(error?.message || error)));
  follow();
}

// ---- the events ----

export function render(event) {
  const draw = kinds[event.type];
  if (draw) draw(event.data, event.seq);
  follow();
}

const kinds = {
  "turn/start": (_, seq) => {
    view.branch = { atSeq: seq - 1, content: null };
  },
  "user/message": (data, seq) => {
    const settled = settlement(data);
    if (settled) return append(settled);
    const bubble = element("div", "msg user");
    bubble.dataset.role = "user";
    const source = data.source || {};
    const kind = source.delivery && source.delivery !== "followup" ? source.delivery
      : source.kind && source.kind !== "user" ? source.kind : null;
    if (kind) bubble.append(element("span", "label", kind));
    // The turn's first message may be edited: sent again, changed, from before its turn.
    const first = view.branch && !view.branch.content && (!kind || source.kind === "user");
    if (first) view.branch.content = data.content;
    const edit = first ? view.branch : null;
    bubble.append(...images(data.content), document.createTextNode(textOf(data.content)));
    bubble.append(person.messageActions(seq, textOf(data.content), { edit }));
    append(bubble);
  },
  "assistant/chunk": ({ chunk }) => {
    if (chunk.type === "text-delta") {
      if (!view.turn) view.turn = append(assistantBubble("msg assistant streaming"));
      view.text += chunk.text;
      if (!view.frame) view.frame = requestAnimationFrame(drawStreaming);
    } else if (chunk.type === "reasoning-delta") {
      if (!view.reasoning) {
        view.reasoning = append(element("details", "reasoning"));
        view.reasoning.append(element("summary", "", "reasoning"));
      }
      view.reasoning.append(document.createTextNode(chunk.text));
    }
  },
  "assistant/message": (data, seq) => {
    // The committed message replaces what streamed (the same text, now final).
    const text = textOf(data.message.content);
    const bubble = view.turn;
    settleStreaming();
    if (!text && !bubble) return;
    const final = bubble || append(assistantBubble("msg assistant"));
    renderMarkdown(final.firstChild, text, { final: true });
    if (data.interrupted) final.classList.add("interrupted");
    const regenerate = view.branch?.content ? view.branch : null;
    final.append(person.messageActions(seq, text, { regenerate }));
  },
  "tool/call": (data) => {
    const card = append(element("div", "tool"));
    card.dataset.tool = data.name;
    const args = parse(data.arguments);
    if (SPAWNS.has(data.name) && args) {
      card.classList.add("subagent");
      const head = element("div", "head", `Subagent${args.name ? ` ${args.name}` : ""}`);
      card.append(head, element("div", "prompt", args.prompt || ""));
    } else if (CODE_TOOLS.has(data.name) && typeof args?.code === "string") {
      card.classList.add("code-tool");
      codeCall(card, data.name, args);
    } else {
      const shown = args ? JSON.stringify(args, null, 2) : data.arguments;
      card.append(element("code", "", `→ ${data.name}`), element("pre", "args", shown));
    }
    view.tools.set(data.callId, { card, name: data.name, args });
    if (data.client) person.clientCall(card, data, args);
  },
  "tool/approval": (data) => {
    const call = view.tools.get(data.callId);
    if (call && data.state === "denied") call.denied = { reason: data.reason };
    person.approval(call?.card, data, call?.args);
  },
  "tool/result": (data) => {
    const block = data.message.content[0] || {};
    const call = view.tools.get(block.toolCallId) || { card: append(element("div", "tool")) };
    person.settled(call.card);
    const text = textOf(block.content);
    const answer = SPAWNS.has(call.name) && !data.error ? parse(text) : null;
    if (answer?.childId) {
      call.card.append(childResult(answer, call.args?.name));
    } else if (CODE_TOOLS.has(call.name)) {
      if (data.error) call.card.classList.add("failed");
      codeResult(call.card, text, data.error);
    } else {
      const result = element("pre", "result", `← ${text}`);
      if (data.error) {
        call.card.classList.add("failed");
        result.textContent = `← ${failure(data.error.code, text, call.denied)}`;
      }
      call.card.append(result);
    }
  },
  "turn/end": (data) => {
    settleStreaming();
    const reason = data.reason.kind;
    const line = append(element("div", "turn-end", `turn ${data.turn}: ${reason}`));
    line.dataset.kind = reason;
    if (data.reason.error) line.textContent += ` (${data.reason.error.code})`;
    if (reason === "paused") line.textContent += " (budget spent)";
  },
  // The session's budget stopped it before a step: nothing failed, it waits for more budget.
  "budget/exhausted": ({ budget, spent }) => {
    const text = `Paused: the session's budget is spent (${spentText(budget, spent)}); raise it to resume.`;
    append(element("div", "note budget", text)).dataset.kind = "exhausted";
  },
  "budget/resumed": ({ budget, spent }) => {
    const limits = budget && (budget.tokens != null || budget.costUsd != null);
    const text = limits
      ? `Resumed: the budget is now ${limitsText(budget)} (${count(spent?.tokens ?? 0)} tokens spent).`
      : "Resumed: the budget was removed.";
    append(element("div", "note budget", text)).dataset.kind = "resumed";
  },
  "goal/change": ({ goal }) => {
    const why = goal && (goal.paused || goal.blocked || goal.waiting);
    const text = goal
      ? `goal ${goal.phase}, round ${goal.roundsStarted}/${goal.maxRounds}: ${goal.objective}${why ? ` (${why.message})` : ""}`
      : "goal cleared";
    append(element("div", "note", text));
  },
  "context/compaction": (data) => {
    settleStreaming(); // the chunks before it belong to a request the compaction ended
    append(compactionBlock(data));
  },
  "subagent/descriptor": (data) => {
    const note = append(element("div", "note", "subagent of "));
    note.append(sessionLink(data.parentSessionId, "its parent session", "parent-link"));
  },
};

// The tools whose answer names a child session.
const SPAWNS = new Set(["agent", "spawn_agent"]);

function parse(json) {
  try {
    const value = JSON.parse(json);
    return value && typeof value === "object" ? value : null;
  } catch {
    return null;
  }
}

function assistantBubble(className) {
  const bubble = element("div", className);
  bubble.dataset.role = "assistant";
  bubble.append(element("div", "md"));
  return bubble;
}

function drawStreaming() {
  view.frame = 0;
  if (!view.turn) return;
  renderMarkdown(view.turn.firstChild, view.text);
  follow();
}

// Chunks of a message that never committed stay as they streamed; later text gets a new bubble.
function settleStreaming() {
  if (view.frame) cancelAnimationFrame(view.frame);
  if (view.turn) {
    renderMarkdown(view.turn.firstChild, view.text, { final: true });
    view.turn.classList.remove("streaming");
  }
  Object.assign(view, { turn: null, text: "", frame: 0, reasoning: null });
}

// A message's images, as the person sent them (a data URL of an image type only).
function images(content) {
  const shown = (Array.isArray(content) ? content : []).filter((block) =>
    block.type === "image" && IMAGE_TYPES.has(block.mediaType));
  return shown.map((block) => {
    const image = element("img", "attached");
    image.src = dataUrl(block);
    image.alt = "an image sent with the message";
    return image;
  });
}

// A failed call's result as a person reads it: its code once (the text often starts with it), and
// a call its `tool/approval` `denied` as what it is, with the person's reason.
function failure(code, text, denied) {
  if (denied) return `denied, not run${denied.reason ? `: ${denied.reason}` : ""}`;
  const said = text.startsWith(`${code}: `) ? text.slice(code.length + 2) : text === code ? "" : text;
  return said ? `${code}: ${said}` : code;
}

// A continuable subagent's result, which reaches its parent as a message (`source.kind:
// "subagent"`, the text `Subagent ID settled: {…}`), drawn as the subagent's card; null for any
// other message.
function settlement(data) {
  const childId = data.source?.kind === "subagent" ? data.source.childId : null;
  const answer = childId ? parse(textOf(data.content).replace(/^Subagent \S+ settled: /, "")) : null;
  if (!answer) return null;
  const card = element("div", "tool subagent settled");
  const head = element("div", "head", "Subagent ");
  head.append(liveName(childId), " finished");
  card.append(head, childResult({ childId, ...answer }, liveName(childId)));
  return card;
}

// A session's name that follows the list's: a result can arrive before the list knows its child.
function liveName(id) {
  const name = element("span", "session-name", nameOf(id));
  name.dataset.sessionId = id;
  return name;
}

onChange((id) => {
  for (const name of box.querySelectorAll(`.session-name[data-session-id="${CSS.escape(id)}"]`)) {
    name.textContent = nameOf(id);
  }
});

// What a subagent tool answered: a link to the child, then its answer (`agent`) or that it
// started (`spawn_agent`, whose answer reaches the parent later as a message). `name` is text or
// a node.
function childResult(answer, name) {
  const result = element("div", "result child");
  const link = sessionLink(answer.childId, "", "child-link");
  link.append("Open ", name || "the subagent", "’s session");
  result.append(link);
  if (answer.stopReason) {
    const stop = element("span", "stop", answer.stopReason);
    stop.dataset.stopReason = answer.stopReason;
    result.append(stop);
  } else {
    result.append(element("span", "stop", "started"));
  }
  if (answer.output) {
    const output = element("div", "md output");
    renderMarkdown(output, answer.output, { final: true });
    result.append(output);
  }
  if (answer.error) result.append(element("span", "stop", `${answer.error.code}: ${answer.error.message || ""}`));
  return result;
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
