// Writes src/openapi.ts: the gateway's OpenAPI document as TypeScript types (openapi-typescript).
// The file is generated, not kept in git: `npm run build` writes it from ../openapi.json, the
// document of a plain gateway kept in the repository (a test of the gateway holds the two equal).
//
//   npm run generate -- ../openapi.json                       # what the build does
//   npm run generate -- --bin ../../target/debug/airlock     # starts that gateway for its document
//   npm run generate -- http://127.0.0.1:PORT/openapi.json
//   npm run generate -- saved-openapi.json [out.ts]           # paths are relative to clients/typescript
//
// The document is fitted to the gateway that serves it (its `tools` and `model` enums), so `--bin`
// starts one with no provider keys, plugins or airlock.toml: the types of a plain gateway.
import { spawn } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import openapiTS, { astToString } from "openapi-typescript";

const args = process.argv.slice(2);
const out = (args[0] === "--bin" ? args[2] : args[1]) ?? "src/openapi.ts";
const document = args[0] === "--bin" ? await served(args[1]) : args[0] ?? "http://127.0.0.1:7700/openapi.json";
const source = typeof document === "string" && !/^https?:\/\//.test(document) ? pathToFileURL(document) : document;

// The document describes free-form objects (an error's `details`, a tool's `parameters`) as bare
// `{type: object}`; by default those become `Record<string, never>`, which no real value fits.
const ast = await openapiTS(typeof source === "string" ? new URL(source) : source, { emptyObjectsUnknown: true });
const banner = "// Generated from the gateway's /openapi.json by `npm run generate`; do not edit.\n\n";
await writeFile(out, banner + astToString(ast));
console.error(`wrote ${out}`);

/** The document of a plain gateway `bin` starts in a temp dir, as parsed JSON. */
async function served(bin) {
  const dir = await mkdtemp(join(tmpdir(), "airlock-openapi-"));
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([key]) => !/^(AIRLOCK_|OPENAI_|DEEPSEEK_)/.test(key)),
  );
  const gateway = spawn(resolve(bin), ["serve", "--listen", "127.0.0.1:0", "--data", join(dir, "airlock.db")], {
    cwd: dir,
    env: { ...env, AIRLOCK_CACHE_DIR: join(dir, "cache") },
    stdio: ["ignore", "ignore", "pipe"],
  });
  try {
    const base = await new Promise((resolve, reject) => {
      let seen = "";
      gateway.stderr.on("data", (chunk) => {
        seen += chunk;
        // The whole line: stderr is unbuffered, so the address may arrive in a later chunk.
        const listening = /airlock: listening on (\S+)\n/.exec(seen);
        if (listening) resolve(listening[1]);
      });
      gateway.on("error", reject);
      gateway.on("exit", (code) => reject(new Error(`${bin} exited (${code}) before listening: ${seen}`)));
    });
    const response = await fetch(`${base}/openapi.json`);
    if (!response.ok) throw new Error(`${base}/openapi.json answered ${response.status}`);
    return await response.json();
  } finally {
    gateway.kill("SIGKILL");
    await rm(dir, { recursive: true, force: true });
  }
}
