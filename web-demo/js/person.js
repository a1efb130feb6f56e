// A person in the loop, drawn from the log like everything else: a call that waits for
// approval gets Approve / Deny buttons on its card (`tool/approval requested`), and the answer
// replaces them (`approved` / `denied`); a call of `ask_user`, the client tool this page
// implements, shows its question with a box for the answer, posted as the call's result; every
// message can be forked from (`POST …/fork {atSeq}`), which opens the fork.

import { api, button, element, sessionPath, state } from "./api.js";

// The tools this page runs itself, declared on the sessions it makes.
export const CLIENT_TOOLS = [
  {
    name: "ask_user",
    description: "Asks the person at the page a question and answers with what they type.",
    parameters: {
      type: "object",
      properties: { question: { type: "string", description: "The question to ask" } },
      required: ["question"],
    },
  },
];

let forked = () => {};

// What to do with a fork the page made (open it).
export function onForked(handler) {
  forked = handler;
}

function callPath(callId, verb) {
  return sessionPath(state.current, `/tool-calls/${encodeURIComponent(callId)}/${verb}`);
}

// Disables the buttons of `box` while its request is out; a refusal is shown in it.
async function acting(box, request) {
  const buttons = [...box.querySelectorAll("button, input")];
  buttons.forEach((b) => (b.disabled = true));
  try {
    await request();
  } catch (error) {
    buttons.forEach((b) => (b.disabled = false));
    box.querySelector(".why")?.replaceChildren(String(error.message || error));
  }
}

// `tool/approval`: the buttons while it is requested, then what was decided.
export function approval(card, data) {
  if (!card) return;
  card.querySelector(".approval")?.remove();
  if (data.state !== "requested") {
    const said = data.state === "denied" && data.reason ? `denied: ${data.reason}` : data.state;
    card.append(element("div", `decided ${data.state}`, said));
    return;
  }
  card.classList.add("waiting");
  const box = element("div", "approval");
  const reason = element("input", "reason");
  reason.placeholder = "Why not? (shown to the model)";
  reason.setAttribute("aria-label", "Reason to deny");
  const approve = button("Approve", () =>
    acting(box, () => api("POST", callPath(data.callId, "approve"), {})));
  approve.className = "approve";
  const deny = button("Deny", () => {
    const body = reason.value.trim() ? { reason: reason.value.trim() } : {};
    return acting(box, () => api("POST", callPath(data.callId, "deny"), body));
  });
  deny.className = "deny";
  box.append(element("span", "label", "Waits for your approval"), approve, reason, deny,
    element("span", "why"));
  card.append(box);
}

// A client tool's `tool/call`: `ask_user` asks here; another waits for its own client.
export function clientCall(card, data, args) {
  card.classList.add("waiting");
  if (data.name !== "ask_user") {
    card.append(element("div", "client-call", "Waits for the client that runs this tool"));
    return;
  }
  const box = element("form", "client-call ask-user");
  box.append(element("div", "question", args?.question || "The agent asks:"));
  const answer = element("input", "answer");
  answer.setAttribute("aria-label", "Your answer");
  const send = element("button", "", "Answer");
  send.type = "submit";
  box.append(answer, send, element("span", "why"));
  box.addEventListener("submit", (event) => {
    event.preventDefault();
    const content = answer.value.trim() || "(no answer)";
    acting(box, () => api("POST", callPath(data.callId, "result"), { content }));
  });
  card.append(box);
}

// The call has its result: nothing waits on this card any more.
export function settled(card) {
  card.classList.remove("waiting");
  card.querySelector(".approval")?.remove();
  card.querySelector(".client-call")?.remove();
}

// A "fork from here" action for the message logged at `seq`.
// Its label is drawn by the stylesheet, so a message's text stays the message.
export function forkAction(seq) {
  const action = button("", async () => {
    const fork = await api("POST", sessionPath(state.current, "/fork"), { atSeq: seq })
      .catch((error) => alert(`The fork failed: ${error.message}`));
    if (fork) forked(fork);
  }, "A new session with this conversation up to here; this one stays as it is");
  action.className = "fork";
  action.setAttribute("aria-label", "Fork from here");
  return action;
}
