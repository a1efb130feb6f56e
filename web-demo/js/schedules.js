// The selected session's schedules: messages the gateway sends it at each due time of a cron
// expression, without the page open. Listed below the conversation with their next due time and
// what they did; made, paused, resumed and deleted through `/v1/schedules`. The gateway lists a
// tenant's schedules; the page shows those aimed at this session.

import { $, api, button, count, element, state, when } from "./api.js";
import { report } from "./conversation.js";

const panel = $("#schedules");
const list = $("#schedule-items");
const form = $("#schedule-form");

// One schedule as a line: its expression and zone, its message, when it is next due and what it
// did, and its buttons.
function item(schedule) {
  const line = element("li");
  line.dataset.scheduleId = schedule.id;
  const text = (schedule.content || []).filter((b) => b.type === "text").map((b) => b.text).join("");
  line.append(
    element("code", "cron", schedule.cron),
    element("span", "meta", ` ${schedule.timezone} `),
    element("span", "content", text),
  );
  const facts = [
    schedule.paused ? "paused" : `next ${when(schedule.nextAt)}`,
    `${count(schedule.fired)} sent`,
  ];
  if (schedule.skipped) facts.push(`${count(schedule.skipped)} skipped`);
  const meta = element("span", "meta", ` · ${facts.join(" · ")}`);
  if (schedule.lastError) meta.title = schedule.lastError;
  line.append(meta);
  const change = (verb) => () => act("POST", `/v1/schedules/${encodeURIComponent(schedule.id)}/${verb}`);
  line.append(
    schedule.paused
      ? button("Resume", change("resume"), "Fire again from the next due time")
      : button("Pause", change("pause"), "Fire nothing until resumed"),
    button("Delete", () => act("DELETE", `/v1/schedules/${encodeURIComponent(schedule.id)}`), "Delete the schedule"),
  );
  return line;
}

async function act(method, path, body) {
  try {
    await api(method, path, body);
  } catch (error) {
    report(error);
  }
  refresh();
}

// Lists the selected session's schedules (the panel is there for every live session: its form
// makes the first one).
export async function refresh() {
  const id = state.current;
  panel.hidden = !id || state.disposed;
  if (panel.hidden) return;
  const listed = await api("GET", "/v1/schedules").catch(() => null);
  if (id !== state.current) return; // another session was opened meanwhile
  const mine = (listed?.items || []).filter((schedule) => schedule.sessionId === id);
  list.replaceChildren(...mine.map(item));
}

form.addEventListener("submit", async (submitted) => {
  submitted.preventDefault();
  const body = {
    cron: $("#schedule-cron").value.trim(),
    timezone: $("#schedule-zone").value.trim() || undefined,
    sessionId: state.current,
    content: $("#schedule-content").value,
  };
  try {
    await api("POST", "/v1/schedules", body);
    $("#schedule-content").value = "";
  } catch (error) {
    report(error);
  }
  refresh();
});

// The page's own time zone, as the expression's default.
$("#schedule-zone").value = Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
