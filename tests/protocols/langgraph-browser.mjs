// The LangGraph chat page (langgraph-page/app.js: React and `useStream`) in Debian's Chromium,
// driven by playwright-core against a running gateway: `node langgraph-browser.mjs BASE TEXT`.
// The page is bundled here with esbuild and served at BASE/langgraph-app/ by the browser's own
// request routing, so it talks to the gateway from its own origin. Prints what the page shows.
import { build } from "esbuild";
import { chromium } from "playwright-core";
import { fileURLToPath } from "node:url";

const [base, text] = process.argv.slice(2);
const bundled = await build({
  entryPoints: [fileURLToPath(new URL("langgraph-page/app.js", import.meta.url))],
  bundle: true,
  write: false,
  format: "esm",
  define: { "process.env.NODE_ENV": '"production"' },
  logLevel: "error",
});
const html = '<!doctype html><meta charset="utf-8"><div id="root"></div><script type="module" src="app.js"></script>';

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
try {
  const page = await browser.newPage();
  const errors = [];
  page.on("pageerror", (error) => errors.push(String(error)));
  await page.route(`${base}/langgraph-app/**`, (route) => {
    const js = route.request().url().endsWith("/app.js");
    route.fulfill({
      contentType: js ? "text/javascript" : "text/html",
      body: js ? bundled.outputFiles[0].text : html,
    });
  });
  await page.goto(`${base}/langgraph-app/`);
  await page.fill("#text", text);
  await page.click("button[type=submit]");
  await page.waitForSelector("#messages li[data-type=ai]", { timeout: 20_000 });
  await page.waitForSelector("button[type=submit]:not([disabled])", { timeout: 20_000 });
  const messages = await page.$$eval("#messages li", (items) =>
    items.map((item) => ({ type: item.dataset.type, text: item.textContent })),
  );
  console.log(JSON.stringify({ messages, errors }));
} finally {
  await browser.close();
}
