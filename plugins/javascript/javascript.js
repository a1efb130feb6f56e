// javascript: runs the JavaScript the model writes, like a notebook cell, in the plugin sandbox.
//
// It implements the `code-plugin` world of wit/plugin/world.wit (package airlock:plugin@0.1.0):
// one tool, `javascript`, taking {"code": string, "timeout_ms"?: integer}. Built with
// plugins/javascript/build.sh (jco componentize: the StarlingMonkey engine, pre-initialized with
// this module); the component is plugins/javascript/javascript.wasm.
//
// Every call runs in a fresh instance, so it shares nothing with the one before: only files in
// the session's workspace last, reached through the `workspace` import and offered to the code
// as a small Node-like `fs`. The gateway bounds time, memory and fuel; this module bounds what
// the answer carries: stdout, stderr and the result's text are cut at MAX_TEXT characters each.
//
// How jco maps the WIT: the `result<string, tool-error>` of `call` is the returned string, or
// the `payload` of what is thrown (a `tool-error` variant `{tag: 'failed', val: '...'}`); an
// import's `result<T, string>` error is thrown as an error whose `payload` is the string.

import { read, write, listDir, remove } from 'airlock:plugin/workspace@0.1.0';

const TOOL = 'javascript';
const WORKSPACE = '/workspace';
const MAX_TEXT = 20_000;
const MAX_TRACEBACK = 8_000;

const DESCRIPTION =
  'Runs JavaScript (ECMAScript 2024 in SpiderMonkey; no network, no Node or browser APIs) and ' +
  'answers JSON {"stdout", "stderr", "result"?, "error"?: {"type", "message", "traceback"}, ' +
  '"files"?}. Like a notebook cell: `result` is the value of the last statement. console.log ' +
  'writes to stdout, console.error to stderr. Each call starts a fresh engine (variables do not ' +
  `carry over); files under ${WORKSPACE} do, through a Node-like \`fs\` (readFileSync, ` +
  'writeFileSync, appendFileSync, readdirSync, existsSync, unlinkSync, mkdirSync), and `files` ' +
  `lists those the call wrote. Output is cut at ${MAX_TEXT} characters per stream. ` +
  "`timeout_ms` may shorten the call's time limit.";

const PARAMETERS = JSON.stringify({
  type: 'object',
  properties: {
    code: { type: 'string', description: 'JavaScript source to run' },
    timeout_ms: {
      type: 'integer',
      minimum: 1,
      description: 'a shorter time limit for this call, in milliseconds',
    },
  },
  required: ['code'],
  additionalProperties: false,
});

const cutNote = (text, cut) => (cut ? `${text}\n[output cut: ${cut} more characters not shown]` : text);
const capped = (text, limit) => cutNote(text.slice(0, limit), Math.max(0, text.length - limit));

// A stream keeping its first MAX_TEXT characters and counting the rest.
class Capped {
  constructor() {
    this.parts = [];
    this.kept = 0;
    this.cut = 0;
  }
  write(text) {
    const room = MAX_TEXT - this.kept;
    if (room > 0) {
      this.parts.push(text.slice(0, room));
      this.kept += Math.min(room, text.length);
    }
    this.cut += Math.max(0, text.length - Math.max(room, 0));
  }
  text() {
    return cutNote(this.parts.join(''), this.cut);
  }
}

// How a value reads in the answer: strings quoted, like a REPL.
function show(value) {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'function') return String(value);
  if (typeof value === 'bigint') return `${value}n`;
  if (value instanceof Error) return `${value.name}: ${value.message}`;
  if (value !== null && typeof value === 'object') {
    try {
      const json = JSON.stringify(value);
      if (json !== undefined) return json;
    } catch {
      // A cycle: below.
    }
  }
  return String(value);
}

const text = (value) => (typeof value === 'string' ? value : show(value));

// A workspace call: its error as an Error with the code (`ENOENT`, ...) Node would give it.
function reach(operation, ...args) {
  try {
    return operation(...args);
  } catch (e) {
    const message = typeof e.payload === 'string' ? e.payload : String(e);
    const error = new Error(message);
    error.code = message.split(':')[0];
    throw error;
  }
}

// `/workspace/a.txt`, `./a.txt` and `a.txt` are the same file; anything else out of the
// workspace is for the host to refuse.
function relative(path) {
  let p = String(path);
  if (p === WORKSPACE || p === `${WORKSPACE}/`) return '';
  if (p.startsWith(`${WORKSPACE}/`)) p = p.slice(WORKSPACE.length + 1);
  else if (p.startsWith('/')) return p;
  while (p.startsWith('./')) p = p.slice(2);
  if (p === '.') return '';
  return p.endsWith('/') ? p.slice(0, -1) : p;
}

const encoding = (options) => (typeof options === 'string' ? options : options?.encoding);
const bytes = (data) =>
  typeof data === 'string' ? new TextEncoder().encode(data) : new Uint8Array(data.buffer ?? data);

const fs = {
  readFileSync(path, options) {
    const read_ = reach(read, relative(path));
    return encoding(options) ? new TextDecoder().decode(read_) : read_;
  },
  writeFileSync(path, data) {
    reach(write, relative(path), bytes(data));
  },
  appendFileSync(path, data) {
    let before = new Uint8Array(0);
    try {
      before = reach(read, relative(path));
    } catch (e) {
      if (e.code !== 'ENOENT') throw e;
    }
    const added = bytes(data);
    const all = new Uint8Array(before.length + added.length);
    all.set(before);
    all.set(added, before.length);
    reach(write, relative(path), all);
  },
  readdirSync(path = '.') {
    return reach(listDir, relative(path)).map((name) => (name.endsWith('/') ? name.slice(0, -1) : name));
  },
  existsSync(path) {
    const p = relative(path);
    if (p === '') return true;
    const slash = p.lastIndexOf('/');
    try {
      const names = reach(listDir, slash < 0 ? '' : p.slice(0, slash));
      const name = p.slice(slash + 1);
      return names.includes(name) || names.includes(`${name}/`);
    } catch {
      return false;
    }
  },
  unlinkSync(path) {
    reach(remove, relative(path));
  },
  // Directories are made by the writes into them.
  mkdirSync() {},
};

function bad(message) {
  return { tag: 'bad-arguments', val: message };
}

function parse(argumentsText) {
  let args;
  try {
    args = JSON.parse(argumentsText);
  } catch (e) {
    throw bad(`arguments are not valid JSON: ${e.message}`);
  }
  if (args === null || typeof args !== 'object' || Array.isArray(args)) {
    throw bad('arguments must be a JSON object');
  }
  const unknown = Object.keys(args).filter((k) => k !== 'code' && k !== 'timeout_ms');
  if (unknown.length) throw bad(`unknown properties ${JSON.stringify(unknown)}; the tool takes \`code\` and \`timeout_ms\``);
  if (typeof args.code !== 'string') {
    throw bad('missing property `code` (the JavaScript source, a string): {"code": "1 + 1"}');
  }
  const timeout = args.timeout_ms;
  if (timeout !== undefined && !(Number.isInteger(timeout) && timeout >= 1)) {
    throw bad(`\`timeout_ms\` must be a positive integer, got ${JSON.stringify(timeout)}`);
  }
  return args.code;
}

function run(code) {
  const stdout = new Capped();
  const stderr = new Capped();
  const line = (stream) => (...values) => stream.write(`${values.map(text).join(' ')}\n`);
  globalThis.console = {
    log: line(stdout),
    info: line(stdout),
    debug: line(stdout),
    warn: line(stderr),
    error: line(stderr),
  };
  globalThis.fs = fs;
  // StarlingMonkey's fetch, built without its HTTP, would trap: no network is no fetch at all.
  delete globalThis.fetch;
  const answer = {};
  let denied = false;
  try {
    // Indirect eval: the code runs as a script in the global scope, and its completion value
    // is the value of its last statement.
    const value = (0, eval)(code);
    if (value !== undefined) answer.result = capped(show(value), MAX_TEXT);
  } catch (e) {
    const error = e instanceof Error ? e : new Error(show(e));
    answer.error = {
      type: e instanceof Error ? error.name : typeof e,
      message: error.message,
      traceback: capped(`${error.name}: ${error.message}\n${error.stack ?? ''}`, MAX_TRACEBACK),
    };
    denied = error.code === 'EACCES';
  }
  return { answer: { stdout: stdout.text(), stderr: stderr.text(), ...answer }, denied };
}

export function describe() {
  return [{ name: TOOL, description: DESCRIPTION, parameters: PARAMETERS, parallelSafe: true }];
}

export function call(name, argumentsText) {
  if (name !== TOOL) {
    throw { tag: 'failed', val: `unknown tool \`${name}\`; this plugin offers \`${TOOL}\`` };
  }
  const { answer, denied } = run(parse(argumentsText));
  const textOut = JSON.stringify(answer);
  if (!('error' in answer)) return textOut;
  throw { tag: denied ? 'denied' : 'failed', val: textOut };
}
