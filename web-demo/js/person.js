// A person in the loop, drawn from the log like everything else: a call that waits for
// approval gets Approve / Deny buttons on its card (`tool/approval requested`), and the answer
// replaces them (`approved` / `denied`); a call of `ask_user`, the client tool this page
// implements, shows its question with a box for the answer, posted as the call's result; every
// message can be copied and forked from (`POST …/fork {atSeq}`, which opens the fork), a turn's
// first message edited and its answer regenerated, each as a fork.

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

// `tool/approval`: the buttons while it is requested, then what was decided. "Edit arguments"
// opens the call's arguments (`args`, the model's) for a change: Approve then runs the call with
// the edited ones (`approve {arguments}`), which the log keeps and the model is told of.
export function approval(card, data, args) {
  if (!card) return;
  card.querySelector(".approval")?.remove();
  if (data.state !== "requested") {
    const said = data.state === "denied" && data.reason ? `denied: ${data.reason}`
      : data.arguments ? `${data.state} with edited arguments: ${data.arguments}` : data.state;
    card.append(element("div", `decided ${data.state}`, said));
    return;
  }
  card.classList.add("waiting");
  const box = element("div", "approval");
  const reason = element("input", "reason");
  reason.placeholder = "Why not? (shown to the model)";
  reason.setAttribute("aria-label", "Reason to deny");
  const edited = element("textarea", "arguments");
  edited.setAttribute("aria-label", "The call's arguments (JSON)");
  edited.value = JSON.stringify(args ?? {}, null, 2);
  edited.hidden = true;
  const edit = button("Edit arguments", () => {
    edited.hidden = !edited.hidden;
    if (!edited.hidden) edited.focus();
  }, "Approve it with other arguments than the model's");
  edit.className = "edit-arguments";
  const approve = button("Approve", () => {
    let body = {};
    if (!edited.hidden) {
      try {
        body = { arguments: JSON.parse(edited.value) };
      } catch (error) {
        box.querySelector(".why").replaceChildren(`The arguments are not JSON: ${error.message}`);
        return;
      }
    }
    return acting(box, () => api("POST", callPath(data.callId, "approve"), body));
  });
  approve.className = "approve";
  const deny = button("Deny", () => {
    const body = reason.value.trim() ? { reason: reason.value.trim() } : {};
    return acting(box, () => api("POST", callPath(data.callId, "deny"), body));
  });
  deny.className = "deny";
  box.append(element("span", "label", "Waits for your approval"), approve, edit, reason, deny,
    edited, element("span", "why"));
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

// What can be done with a message logged at `seq` whose text is `text`: copy it, fork from it,
// and, given `branch` ({atSeq, content}: the seq before its turn and the message that began
// it), edit it (a turn's first message) or regenerate it (the turn's answer). Both make a fork
// through `atSeq`, open it and send the message there again (edited), so the old branch stays
// as it was, a link away ("fork of …" in the header). The labels are drawn by the stylesheet, so
// a message's text stays the message.
export function messageActions(seq, text, { edit, regenerate } = {}) {
  const actions = element("span", "actions");
  const copy = action("copy", "Copy this message's text", async () => {
    await navigator.clipboard.writeText(text);
    copy.dataset.label = "copied";
  });
  actions.append(copy);
  if (edit) {
    actions.append(action("edit", "Change this message: a new branch from before it, the old one kept", () => {
      editing(actions.closest(".msg"), edit);
    }));
  }
  if (regenerate) {
    actions.append(action("regenerate", "Answer again: a new branch from before this turn, the old one kept", () =>
      branchFrom(regenerate.atSeq, regenerate.content)));
  }
  actions.append(action("fork from here", "A new session with this conversation up to here; this one stays as it is", () =>
    branchFrom(seq)));
  return actions;
}

function action(label, title, onClick) {
  const node = button("", onClick, title);
  node.dataset.label = label;
  node.setAttribute("aria-label", label);
  return node;
}

// Forks through `atSeq` and opens the fork; sends `content` there when given.
async function branchFrom(atSeq, content) {
  const from = state.current;
  try {
    const fork = await api("POST", sessionPath(from, "/fork"), { atSeq });
    forked(fork);
    if (content) await api("POST", sessionPath(fork.sessionId, "/messages"), { content });
  } catch (error) {
    alert(`The branch failed: ${error.message}`);
  }
}

// The bubble becomes a box holding its text; sending it makes the new branch.
function editing(bubble, { atSeq, content }) {
  if (!bubble || bubble.querySelector("form.edit")) return;
  const form = element("form", "edit");
  const text = element("textarea");
  text.setAttribute("aria-label", "The message, edited");
  text.value = content.filter((block) => block.type === "text").map((block) => block.text).join("");
  const send = element("button", "", "Send as a new branch");
  send.type = "submit";
  const cancel = button("Cancel", () => form.remove());
  form.append(text, send, cancel);
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const others = content.filter((block) => block.type !== "text"); // images stay
    branchFrom(atSeq, [...others, { type: "text", text: text.value }]);
  });
  bubble.append(form);
  text.focus();
}
