// A LangGraph chat page of a few lines, as an app built on the LangGraph Platform writes one:
// React and the SDK's `useStream`, pointed at the page's own origin's `/langgraph`. Bundled by
// tests/protocols/langgraph-browser.mjs and opened in Chromium.
import { createElement as h, useState } from "react";
import { createRoot } from "react-dom/client";
import { useStream } from "@langchain/langgraph-sdk/react";

function Chat() {
  const thread = useStream({ apiUrl: `${location.origin}/langgraph`, assistantId: "agent", messagesKey: "messages" });
  const [text, setText] = useState("");
  const send = (event) => {
    event.preventDefault();
    thread.submit({ messages: [{ type: "human", content: text }] });
    setText("");
  };
  const shown = (message) => (typeof message.content === "string" ? message.content : JSON.stringify(message.content));
  return h(
    "main",
    null,
    h("ol", { id: "messages" }, thread.messages.map((m) => h("li", { key: m.id, "data-type": m.type }, shown(m)))),
    h(
      "form",
      { onSubmit: send },
      h("input", { id: "text", value: text, onChange: (event) => setText(event.target.value) }),
      h("button", { type: "submit", disabled: thread.isLoading }, "Send"),
    ),
    thread.error ? h("p", { id: "error" }, String(thread.error)) : null,
  );
}

createRoot(document.getElementById("root")).render(h(Chat));
