// The code tools (`python`, `javascript`) and the session's workspace: a call shows its code as
// a code block, its answer as its output (stdout, stderr, the result, the error and its
// traceback) with the files it wrote, images inline; the workspace's files are listed below the
// conversation as downloads. Everything shown is model- or code-made text: set as text, never as
// HTML, and a file is only ever a link or an <img> (the gateway serves it sandboxed).

import { $, api, element, sessionPath, state } from "./api.js";

// The tools whose arguments are `{code}` and whose answer is `{stdout, stderr, result?, ...}`.
export const CODE_TOOLS = new Set(["python", "javascript"]);

const IMAGE = /\.(png|jpe?g|gif|webp|svg)$/i;

const panel = $("#files");
const list = $("#file-items");

// Where a workspace file of the selected session downloads from.
function fileUrl(path) {
  return sessionPath(state.current, `/files/${path.split("/").map(encodeURIComponent).join("/")}`);
}

function fileLink(file) {
  const link = element("a", "file", file.path);
  link.href = fileUrl(file.path);
  link.download = file.path.split("/").pop();
  link.title = `${file.bytes} bytes`;
  return link;
}

// A code tool's call: its code, in a code block named by its language.
export function codeCall(card, name, args) {
  const code = element("pre", "code", args.code);
  code.dataset.lang = name;
  card.append(element("code", "", `→ ${name}`), code);
}

// A code tool's answer (`text`, its JSON), or its error text when it is not that JSON (a timeout,
// a memory limit): drawn into `card`. Refreshes the file list when the call wrote files.
export function codeResult(card, text, error) {
  let answer = null;
  try {
    answer = JSON.parse(text);
  } catch {
    answer = null;
  }
  if (!answer || typeof answer !== "object" || !("stdout" in answer)) {
    card.append(element("pre", "result", `← ${error ? `${error.code}: ` : ""}${text}`));
    return;
  }
  const output = element("div", "output");
  if (answer.stdout) output.append(element("pre", "stdout", answer.stdout));
  if (answer.stderr) output.append(element("pre", "stderr", answer.stderr));
  if (answer.result !== undefined) output.append(element("pre", "value", answer.result));
  if (answer.error) {
    const failed = element("pre", "error", answer.error.traceback || `${answer.error.type}: ${answer.error.message}`);
    failed.dataset.type = answer.error.type;
    output.append(failed);
  }
  if (!output.childElementCount) output.append(element("pre", "value empty", "(no output)"));
  card.append(output);
  if (answer.files?.length) {
    const files = element("div", "files");
    for (const file of answer.files) {
      if (IMAGE.test(file.path)) {
        const image = element("img", "inline");
        image.src = fileUrl(file.path);
        image.alt = file.path;
        files.append(image);
      }
      files.append(fileLink(file));
    }
    card.append(files);
    refresh();
  }
}

// Lists the selected session's workspace below the conversation (hidden when it has none).
export async function refresh() {
  const id = state.current;
  if (!id || state.disposed) {
    panel.hidden = true;
    return;
  }
  const listed = await api("GET", sessionPath(id, "/files")).catch(() => null);
  if (id !== state.current) return; // another session was opened meanwhile
  const items = listed?.items || [];
  list.replaceChildren(...items.map((file) => {
    const item = element("li");
    item.append(fileLink(file), element("span", "meta", ` ${file.bytes} bytes`));
    return item;
  }));
  panel.hidden = items.length === 0;
}
