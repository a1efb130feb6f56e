// What every part of the page shares: the selected session, the gateway's API and small DOM
// helpers. Nothing here draws a part of the page.

export const $ = (selector) => document.querySelector(selector);

// The selected session, as the other modules read it.
export const state = {
  current: null, // its id
  status: null, // "idle" or "running", from its stream
  disposed: false, // disposed sessions are shown read-only
  child: false, // a continuable subagent: only its parent gives it work
};

// An answer other than 2xx, with the error body's code when there was one.
export class ApiError extends Error {
  constructor(status, body) {
    const error = body?.error;
    super(error ? `${error.code}: ${error.message}` : `HTTP ${status}`);
    this.status = status;
    this.code = error?.code;
    this.reason = error?.message;
  }
}

let unauthorized = () => {};

// What to do when the gateway asks for a key (a 401).
export function onUnauthorized(handler) {
  unauthorized = handler;
}

// One request to the gateway; the JSON answer, or an `ApiError`.
export async function api(method, path, body) {
  const response = await fetch(path, {
    method,
    headers: body === undefined ? {} : { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  let json = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    json = null; // a proxy's error page: the status says enough
  }
  if (response.status === 401) unauthorized(json?.error?.message);
  if (!response.ok) throw new ApiError(response.status, json);
  return json;
}

// `/v1/sessions/{id}` followed by `rest`.
export function sessionPath(id, rest = "") {
  return `/v1/sessions/${encodeURIComponent(id)}${rest}`;
}

export function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

// A real button: focusable, Enter and Space press it.
export function button(label, onClick, title) {
  const node = element("button", "", label);
  node.type = "button";
  if (title) node.title = title;
  node.addEventListener("click", onClick);
  return node;
}

// A link to a session of this page (`#id`); the page follows the hash.
export function sessionLink(id, text, className) {
  const link = element("a", className, text);
  link.href = `#${encodeURIComponent(id)}`;
  link.dataset.sessionId = id;
  return link;
}

export function textOf(content) {
  if (typeof content === "string") return content;
  return (content || [])
    .filter((block) => block.type === "text")
    .map((block) => block.text)
    .join("");
}

// Counts and money as a person reads them: "10,000", "$0.50", "$0.0123".
export const count = (n) => Number(n).toLocaleString("en-US");
export const dollars = (usd) =>
  `$${Number(usd).toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 4 })}`;

// A budget's limits ({tokens?, costUsd?}): "10,000 tokens · $0.50".
export function limitsText(budget) {
  const parts = [];
  if (budget?.tokens != null) parts.push(`${count(budget.tokens)} tokens`);
  if (budget?.costUsd != null) parts.push(dollars(budget.costUsd));
  return parts.join(" · ") || "no limit";
}

// What was spent of each limit of a budget: "12,345 of 10,000 tokens, $0.01 of $0.01".
export function spentText(budget, spent) {
  const parts = [];
  if (budget?.tokens != null) parts.push(`${count(spent?.tokens ?? 0)} of ${count(budget.tokens)} tokens`);
  if (budget?.costUsd != null) parts.push(`${dollars(spent?.costUsd ?? 0)} of ${dollars(budget.costUsd)}`);
  return parts.join(", ") || `${count(spent?.tokens ?? 0)} tokens`;
}

const clock = new Intl.DateTimeFormat(undefined, { hour: "2-digit", minute: "2-digit" });
const day = new Intl.DateTimeFormat(undefined, {
  month: "short",
  day: "numeric",
  hour: "2-digit",
  minute: "2-digit",
});

// An epoch-ms time as a person reads it: the clock today, the day and clock before.
export function when(ms) {
  const date = new Date(ms);
  return date.toDateString() === new Date().toDateString() ? clock.format(date) : day.format(date);
}
