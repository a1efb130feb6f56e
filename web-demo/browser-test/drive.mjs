// Drives the web demo in Debian's Chromium for tests/tests/browser.rs. One JSON command per
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
const page = await browser.newPage({ viewport: { width: 1100, height: 720 } });
const errors = [];
page.on("pageerror", (error) => errors.push(String(error)));

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
  newSession: async () => {
    const before = await page.textContent("#session-title");
    await page.click("#new-session");
    await page.waitForFunction(
      (old) => document.querySelector("#session-title").textContent !== old,
      before,
      { timeout: TIMEOUT },
    );
    return page.textContent("#session-title");
  },
  send: async ({ text, delivery = "followup" }) => {
    await page.selectOption("#delivery", delivery);
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
    process.stdout.write(`${JSON.stringify({ ok: false, error: String(error) })}\n`);
  }
}
await browser.close();
