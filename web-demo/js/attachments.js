// Images attached to the next message: picked ("Attach image") or pasted into the composer, shown
// as thumbnails until sent (each with × to drop it), and sent as the message's `image` blocks
// before its text. Only what a model takes is attached: PNG, JPEG, GIF and WebP.

import { $, button, element } from "./api.js";

// The image types a message may carry (the gateway takes no other).
export const TYPES = new Set(["image/png", "image/jpeg", "image/gif", "image/webp"]);

// An image block (or an attachment) as a URL an <img> shows, from the page itself.
export const dataUrl = ({ mediaType, data }) => `data:${mediaType};base64,${data}`;

const attached = []; // {mediaType, data (base64), name}
const listeners = new Set();

// Calls `listener()` whenever the attachments change (the send button cares).
export function onChange(listener) {
  listeners.add(listener);
}

// The attached images as content blocks, in the order they were added.
export function blocks() {
  return attached.map(({ mediaType, data }) => ({ type: "image", mediaType, data }));
}

export function count() {
  return attached.length;
}

// Drops every attachment (they were sent, or the session changed).
export function clear() {
  attached.length = 0;
  render();
}

async function add(file) {
  if (!TYPES.has(file.type)) {
    throw new Error(`${file.name || "That file"} is ${file.type || "not an image"}; attach a PNG, JPEG, GIF or WebP image`);
  }
  const bytes = new Uint8Array(await file.arrayBuffer());
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  attached.push({ mediaType: file.type, data: btoa(binary), name: file.name || "pasted image" });
  render();
}

function render() {
  const strip = $("#attachments");
  strip.hidden = attached.length === 0;
  strip.replaceChildren(...attached.map((image, index) => {
    const item = element("li");
    const thumb = element("img");
    thumb.src = dataUrl(image);
    thumb.alt = image.name;
    const drop = button("×", () => {
      attached.splice(index, 1);
      render();
    }, `Remove ${image.name}`);
    item.append(thumb, drop);
    return item;
  }));
  for (const listener of listeners) listener();
}

// Wires the picker and the composer's paste; a refused file is told to `report`.
export function wire(report) {
  const picker = $("#attach-input");
  $("#attach").addEventListener("click", () => picker.click());
  picker.addEventListener("change", async () => {
    for (const file of picker.files) await add(file).catch(report);
    picker.value = "";
  });
  $("#message").addEventListener("paste", async (event) => {
    const files = [...(event.clipboardData?.files || [])];
    if (!files.length) return; // text pastes as text
    event.preventDefault();
    for (const file of files) await add(file).catch(report);
  });
}
