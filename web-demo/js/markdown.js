// Model text as Markdown: parsed by marked, then sanitized by DOMPurify before it touches the
// page, so a model (or whatever it read) can put no script, handler or remote resource on it;
// code blocks of a final text are coloured by highlight.js (its language, or the one it guesses),
// which only wraps the sanitized text in spans. The libraries are vendored copies served by the
// gateway itself (web-demo/vendor/).

import hljs from "/vendor/highlight.min.js";
import { Marked } from "/vendor/marked.esm.js";
import "/vendor/purify.min.js"; // a UMD build: it sets globalThis.DOMPurify

const DOMPurify = globalThis.DOMPurify;

const escapes = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };
const escape = (text) => String(text).replace(/[&<>"']/g, (c) => escapes[c]);

const marked = new Marked({
  gfm: true,
  breaks: true, // chat text: a line break the model wrote is one the person sees
  renderer: {
    // The page loads nothing from elsewhere, so an image becomes a link to it.
    image({ href, text }) {
      return `<a href="${escape(href)}">${escape(text || href)}</a>`;
    },
  },
});

const PURIFY = {
  USE_PROFILES: { html: true },
  FORBID_TAGS: ["img", "picture", "video", "audio", "source", "iframe", "style", "form", "button", "textarea", "select"],
  FORBID_ATTR: ["style", "srcset"],
};

// Links open in a new tab and tell the other site nothing; links within the page stay.
DOMPurify.addHook("afterSanitizeAttributes", (node) => {
  if (node.tagName === "A" && !node.getAttribute("href")?.startsWith("#")) {
    node.setAttribute("target", "_blank");
    node.setAttribute("rel", "noopener noreferrer");
  }
});

// Renders `text` into `target`, replacing what it held; `final` text (not a frame of a stream)
// gets its code blocks highlighted.
export function renderMarkdown(target, text, { final = false } = {}) {
  target.innerHTML = DOMPurify.sanitize(marked.parse(text), PURIFY).trim();
  if (final) for (const code of target.querySelectorAll("pre > code")) highlight(code);
}

// Colours a code block: its `language-…` when highlight.js knows it, else its best guess; a
// block it cannot place stays plain.
function highlight(code) {
  const named = /\blanguage-(\S+)/.exec(code.className)?.[1];
  if (named && !hljs.getLanguage(named)) return;
  hljs.highlightElement(code);
}

// A message as a one-line title a person reads: Markdown by its words (the first block that has
// any, without marks), a JSON object by its first text field, cut to `max` characters.
export function titleOf(text, max = 80) {
  const box = document.createElement("div");
  renderMarkdown(box, jsonText(text) ?? text ?? "");
  const blocks = box.querySelectorAll("h1, h2, h3, h4, h5, h6, p, li, pre, blockquote, td, th");
  const words = [...blocks, box].map((block) => block.textContent.replace(/\s+/g, " ").trim());
  const line = words.find((w) => w) || "";
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

// The text a JSON message is about: its first string under a key that names one, else its first
// string at all; null for text that is no JSON object or list.
const TEXT_KEYS = ["title", "name", "task", "prompt", "question", "message", "text", "content", "query"];
function jsonText(text) {
  const trimmed = (text || "").trim();
  if (!/^[[{]/.test(trimmed)) return null;
  let value;
  try {
    value = JSON.parse(trimmed);
  } catch {
    return null;
  }
  const strings = [];
  const walk = (v, key) => {
    if (typeof v === "string" && v.trim()) strings.push({ key, text: v });
    else if (v && typeof v === "object") for (const [k, inner] of Object.entries(v)) walk(inner, k);
  };
  walk(value, null);
  const named = TEXT_KEYS.map((key) => strings.find((s) => s.key === key)).find(Boolean);
  return (named || strings[0])?.text ?? "(JSON)";
}
