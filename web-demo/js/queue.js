// The selected session's queue, as its stream's `session.queue` frames list it: steer a queued
// followup into the running turn, edit an item's text, or remove it.

import { $, api, button, element, sessionPath, state, textOf } from "./api.js";
import { report } from "./conversation.js";

export function renderQueue(items) {
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
