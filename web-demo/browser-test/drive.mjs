// Drives the web demo in Debian's Chromium for tests/tests/all/browser/. One JSON command per
// line on stdin, one JSON answer per line on stdout: {"ok": true, "value": ...} or
// {"ok": false, "error": "..."}. The Rust test owns the gateway and the mock model; this script
// only acts in the page and reports what it shows.

import { createInterface } from "node:readline";
import { chromium } from "playwright-core";

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  args: [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
  ],
});
// The clipboard may be written and read back (a message's "copy").
const page = await browser.newPage({
  viewport: { width: 1100, height: 720 },
  permissions: ["clipboard-read", "clipboard-write"],
});
const errors = [];
page.on("pageerror", (error) => errors.push(String(error)));
// What the console reported as errors: a failed load (a 404, a refused connection), a blocked
// resource. Tests that restart the gateway or sign in expect some; the others expect none.
const consoleErrors = [];
page.on("console", (message) => {
  if (message.type() === "error") consoleErrors.push(message.text());
});

const TIMEOUT = 20_000;

const commands = {
  // Opens the page; it is ready once connected, or once it asks for a key.
  open: async ({ url }) => {
    await page.goto(url);
    await page.waitForSelector("#connection[data-state='open'], #sign-in:not([hidden])", {
      timeout: TIMEOUT,
    });
  },
  signIn: async ({ key }) => {
    await page.fill("#key", key);
    await page.click("#sign-in button");
  },
  // Makes a session with the page's button; answers its id once the page shows it.
  newSession: async () => {
    const before = await page.getAttribute("#main", "data-session-id");
    await page.click("#new-session");
    await page.waitForFunction(
      (old) => (document.querySelector("#main").dataset.sessionId ?? null) !== old,
      before,
      { timeout: TIMEOUT },
    );
    return page.getAttribute("#main", "data-session-id");
  },
  // Sends `text` from the composer as `delivery` (chosen only when it is not already: with no
  // session selected the choice is disabled, and a message starts a session).
  send: async ({ text, delivery = "followup" }) => {
    if ((await page.inputValue("#delivery")) !== delivery) await page.selectOption("#delivery", delivery);
    await page.fill("#message", text);
    await page.press("#message", "Enter");
  },
  // Waits until an element matching `selector` has `text` in it.
  waitText: async ({ selector, text }) => {
    await page.waitForFunction(
      ([selector, text]) =>
        [...document.querySelectorAll(selector)].some((e) => e.textContent.includes(text)),
      [selector, text],
      { timeout: TIMEOUT },
    );
  },
  // Clicks the first element matching `selector` whose text is `text` (or the first at all);
  // a dialog the click opens is answered with `answer`.
  click: async ({ selector, text, answer }) => {
    const target = text === undefined ? page.locator(selector).first()
      : page.locator(selector, { hasText: text }).first();
    if (answer !== undefined) page.once("dialog", (dialog) => dialog.accept(answer));
    await target.click({ timeout: TIMEOUT });
  },
  press: async ({ key }) => page.keyboard.press(key),
  // Types `value` into the form field `selector`, replacing what it held.
  fill: async ({ selector, value }) => page.fill(selector, value, { timeout: TIMEOUT }),
  // Moves the keyboard focus to the first element matching `selector`.
  focus: async ({ selector }) => page.locator(selector).first().focus({ timeout: TIMEOUT }),
  // The selector of the element that has the keyboard focus, as `tag#id.class`.
  focused: async () => page.evaluate(() => {
    const e = document.activeElement;
    return `${e.tagName.toLowerCase()}${e.id ? `#${e.id}` : ""}${[...e.classList].map((c) => `.${c}`).join("")}`;
  }),
  // Waits until exactly `count` elements match `selector`.
  waitCount: async ({ selector, count }) => {
    await page.waitForFunction(
      ([selector, count]) => document.querySelectorAll(selector).length === count,
      [selector, count],
      { timeout: TIMEOUT },
    );
  },
  // Where the element `selector` is scrolled to, and whether its last child is in its view.
  scrollState: async ({ selector }) => page.$eval(selector, (box) => {
    const last = box.lastElementChild?.getBoundingClientRect();
    const view = box.getBoundingClientRect();
    return {
      top: box.scrollTop,
      height: box.scrollHeight,
      client: box.clientHeight,
      atBottom: box.scrollHeight - box.scrollTop - box.clientHeight <= 2,
      lastInView: Boolean(last) && last.bottom <= view.bottom + 1 && last.bottom > view.top,
    };
  }),
  // Scrolls the element `selector` to its top, as a person reading back would.
  scrollToTop: async ({ selector }) => {
    await page.locator(selector).hover();
    await page.mouse.wheel(0, -1_000_000);
    await page.waitForFunction((s) => document.querySelector(s).scrollTop === 0, selector, {
      timeout: TIMEOUT,
    });
  },
  // The text of every element matching `selector`, in document order.
  texts: async ({ selector }) =>
    page.$$eval(selector, (nodes) => nodes.map((n) => n.textContent)),
  // The class lists of every element matching `selector`.
  classes: async ({ selector }) =>
    page.$$eval(selector, (nodes) => nodes.map((n) => n.className)),
  // The attribute `name` of every element matching `selector` (null where it is absent).
  attributes: async ({ selector, name }) =>
    page.$$eval(selector, (nodes, name) => nodes.map((n) => n.getAttribute(name)), name),
  // Waits until an element matching `selector` with `text` in it is shown, not just in the DOM
  // (the body of a folded <details> is there but hidden).
  waitVisible: async ({ selector, text }) => {
    await page.locator(selector, { hasText: text }).first()
      .waitFor({ state: "visible", timeout: TIMEOUT });
  },
  // Sizes the window as a screen `width` × `height` CSS pixels wide and high.
  viewport: async ({ width, height }) => page.setViewportSize({ width, height }),
  // Whether the page fits its window: how wide it is against the window, and which of the
  // elements matching `selector` that are shown reach past the window's right edge (by id).
  fits: async ({ selector }) => page.evaluate((selector) => {
    const width = window.innerWidth;
    const outside = [...document.querySelectorAll(selector)]
      .filter((e) => e.checkVisibility() && e.getBoundingClientRect().right > width + 0.5)
      .map((e) => e.id || e.className);
    return { width, scrollWidth: document.documentElement.scrollWidth, outside };
  }, selector),
  // Whether the first element matching `selector` is shown (not hidden by display, visibility,
  // or a size of zero).
  visible: async ({ selector }) => page.locator(selector).first().isVisible(),
  // Picks a file for the file input `selector`: `name`, `mimeType` and its bytes in `base64`.
  pick: async ({ selector, name, mimeType, base64 }) =>
    page.setInputFiles(selector, { name, mimeType, buffer: Buffer.from(base64, "base64") }),
  // Pastes a file into the element `selector`, as a person pasting a copied image does.
  pasteFile: async ({ selector, name, mimeType, base64 }) => page.$eval(selector, (target, file) => {
    const bytes = Uint8Array.from(atob(file.base64), (c) => c.charCodeAt(0));
    const data = new DataTransfer();
    data.items.add(new File([bytes], file.name, { type: file.mimeType }));
    target.dispatchEvent(new ClipboardEvent("paste", { clipboardData: data, bubbles: true, cancelable: true }));
  }, { name, mimeType, base64 }),
  // The natural width of every image matching `selector` (0: it did not load).
  imageWidths: async ({ selector }) =>
    page.$$eval(selector, (images) => images.map((image) => image.naturalWidth)),
  // What the clipboard holds as text.
  clipboard: async () => page.evaluate(() => navigator.clipboard.readText()),
  // The `placeholder` and `value` of the form field `selector`, and whether it is disabled.
  field: async ({ selector }) => page.$eval(selector, (e) => ({
    placeholder: e.placeholder ?? null,
    value: e.value,
    disabled: e.disabled,
  })),
  reload: async () => {
    await page.reload();
    await page.waitForSelector("#connection[data-state='open']", { timeout: TIMEOUT });
  },
  // The value of `document.cookie`: what a script on the page can read.
  scriptCookies: async () => page.evaluate(() => document.cookie),
  waitConnection: async ({ state }) => {
    await page.waitForSelector(`#connection[data-state='${state}']`, { timeout: TIMEOUT });
  },
  screenshot: async ({ path, scheme }) => {
    await page.emulateMedia({ colorScheme: scheme });
    await page.screenshot({ path });
  },
  errors: async () => errors,
  consoleErrors: async () => consoleErrors,
};

const lines = createInterface({ input: process.stdin });
for await (const line of lines) {
  if (!line.trim()) continue;
  const command = JSON.parse(line);
  try {
    const run = commands[command.do];
    if (!run) throw new Error(`unknown command ${command.do}`);
    const value = await run(command);
    process.stdout.write(`${JSON.stringify({ ok: true, value: value ?? null })}\n`);
  } catch (error) {
    // What the page showed then, to tell why a wait ran out.
    const shown = await page.evaluate(() => document.querySelector("#main")?.innerText.slice(-1500))
      .catch(() => "(the page could not be read)");
    const report = `${error}\n--- the page showed:\n${shown}`;
    process.stdout.write(`${JSON.stringify({ ok: false, error: report })}\n`);
  }
}
await browser.close();
