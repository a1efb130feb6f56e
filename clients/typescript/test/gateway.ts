// A real `airlock serve` for one test: its own temp dir and data file, on a fixed free port so
// that a restart comes back at the same address.
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer, type AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

/** clients/typescript (this file runs as build/test/gateway.js). */
export const packageDir = resolve(fileURLToPath(import.meta.url), "../../..");
export const airlockBin =
  process.env.AIRLOCK_BIN ?? resolve(packageDir, "../../target/debug/airlock");

export const run = promisify(execFile);

/** A port nobody listens on: bound on port 0, then closed. */
async function freePort(): Promise<number> {
  const server = createServer().listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  server.close();
  await once(server, "close");
  return port;
}

/** The environment without what would change the gateway: its settings, provider keys, logs. */
function gatewayEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(
    Object.entries(process.env).filter(
      ([name]) => !/^(AIRLOCK_|OPENAI_|DEEPSEEK_|RUST_LOG)/.test(name),
    ),
  );
}

export class Gateway {
  #child: ChildProcess | undefined;
  stderr = "";

  private constructor(
    readonly dir: string,
    readonly port: number,
  ) {}

  /** A gateway on a fresh data file; `prepare` runs before it starts (to make keys, say). */
  static async start(prepare?: (gateway: Gateway) => Promise<void>): Promise<Gateway> {
    const gateway = new Gateway(await mkdtemp(join(tmpdir(), "airlock-ts-")), await freePort());
    await prepare?.(gateway);
    await gateway.start();
    return gateway;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  get data(): string {
    return join(this.dir, "airlock.db");
  }

  /** Runs `airlock ARGS…` the way the gateway runs (same dir and environment). */
  async airlock(...args: string[]): Promise<string> {
    const { stdout } = await run(airlockBin, args, { cwd: this.dir, env: gatewayEnv() });
    return stdout;
  }

  /** Starts `airlock serve` and resolves once it says it listens (it listens after recovery). */
  async start(): Promise<void> {
    const listen = `127.0.0.1:${this.port}`;
    const child = spawn(airlockBin, ["serve", "--listen", listen, "--data", this.data], {
      cwd: this.dir,
      env: gatewayEnv(),
      stdio: ["ignore", "ignore", "pipe"],
    });
    this.stderr = "";
    await new Promise<void>((resolve, reject) => {
      child.once("error", reject);
      child.once("exit", (code, signal) =>
        reject(new Error(`airlock serve exited (${code ?? signal}): ${this.stderr}`)),
      );
      child.stderr!.setEncoding("utf8").on("data", (text: string) => {
        this.stderr += text;
        if (this.stderr.includes(`airlock: listening on http://${listen}`)) resolve();
      });
    });
    this.#child = child;
  }

  /** Kills the gateway (SIGKILL: no shutdown, no flush) and waits until it is gone. */
  async kill(): Promise<void> {
    const child = this.#child;
    this.#child = undefined;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    child.kill("SIGKILL");
    await once(child, "exit");
  }

  async stop(): Promise<void> {
    await this.kill();
    await rm(this.dir, { recursive: true, force: true });
  }
}
