// The selected session's queue: the stream's `session.queue` frame lists it once, where the log
// read meets the live events, and every later change is an `agent/inbox/spliced` event, applied
// here as `Array.splice` on its list. Steer a queued followup into the running turn, edit an
// item's text, or remove it.

import { $, api, button, element, sessionPath, state, textOf } from "./api.js";
import { report } from "./conversation.js";

// The two inbox lists, each in order.
let lists = { "next-step": [], "next-turn": [] };

// The queue as a `session.queue` frame lists it (`next-step` items first).
export function setQueue(items) {
  lists = { "next-step": [], "next-turn": [] };
  for (const item of items) lists[item.target]?.push(item);
  renderQueue();
}

// One `agent/inbox/spliced` event's change.
export function applySplice({ target, start, removedCount = 0, inserted = [] }) {
  const items = inserted.map((message) => ({
    messageId: message.id,
    target,
    delivery: message.source?.delivery || "inject",
    message,
  }));
  lists[target]?.splice(start, removedCount, ...items);
  renderQueue();
}

function renderQueue() {
  const items = [...lists["next-step"], ...lists["next-turn"]];
  const list = $("#queue-items");
  list.replaceChildren();
  $("#queue").hidden = items.length === 0;
  for (const item of items) {
    const row = element("li");
    row.dataset.messageId = item.messageId;
    const text = textOf(item.message?.content);
    row.append(element("span", "kind", item.delivery), element("span", "text", text));
    const path = sessionPath(state.current, `/queue/${encodeURIComponent(item.messageId)}`);
    const act = (label, action, title) =>
      button(label, () => action().catch(report), title);
    if (item.target === "next-turn") {
      row.append(act("Steer", () => api("POST", `${path}/steer`), "Join the running turn now"));
    }
    row.append(
      act("Edit", async () => {
        const edited = prompt("New text", text);
        if (edited !== null) await api("PATCH", path, { content: edited });
      }),
      act("Remove", () => api("DELETE", path)),
    );
    for (const b of row.querySelectorAll("button")) b.disabled = state.disposed;
    list.append(row);
  }
}
