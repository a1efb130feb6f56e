// Model text as Markdown: parsed by marked, then sanitized by DOMPurify before it touches the
// page, so a model (or whatever it read) can put no script, handler or remote resource on it.
// Both libraries are vendored copies served by the gateway itself (web-demo/vendor/).

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

// Renders `text` into `target`, replacing what it held.
export function renderMarkdown(target, text) {
  target.innerHTML = DOMPurify.sanitize(marked.parse(text), PURIFY).trim();
}
