// scratchpad-mcp's tools inside your own Node process, sandboxed in WebAssembly.
//
//   import { Scratchpad } from 'scratchpad-tools';
//   const pad = new Scratchpad('data');               // the store is data/scratchpad.db
//   const planner = pad.forAgent('planner');          // its tools have no agent_id at all
//   await planner.call('write_file', { path: 'plan.md', content: '1. read the spec' });
//   await planner.call('read_file', { path: 'plan.md' });
//   await pad.close();
//
// Every rule and the SQLite store are inside the self-contained component this package
// carries (transpiled by jco into gen/). `call` takes the MCP tool name and arguments and
// resolves to exactly what the scratchpad-mcp server returns as `structuredContent`; `tools()`
// gives the definitions exactly as its `tools/list`. A refused call rejects with a ToolError
// and changes nothing. Each Scratchpad runs its component on a worker thread of its own
// (worker.js says why), and a call that runs past `timeoutMs` is stopped there.

import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MessageChannel, Worker } from 'node:worker_threads';
import { instantiate } from '../gen/scratchpad.js';
import { coreModules, wasi } from './jco.js';

/** How long one call may run (wall time, the summariser's wait excluded) before it is
 * stopped: far above any legitimate call, as the server's 5 s of CPU is. */
export const CALL_TIMEOUT_MS = 10_000;

/** The server's `[limits]` names (its config file's); the two u32 ones are Numbers in jco. */
export const LIMIT_NAMES = ['max_files', 'max_log_entries', 'max_total_bytes', 'max_write_bytes',
  'max_log_entry_bytes', 'versions_kept', 'log_page_size', 'max_response_tokens'];
const U32_LIMITS = new Set(['versions_kept', 'log_page_size']);

const GEN = new URL('../gen/', import.meta.url);

/** A call the tools refused; nothing was changed. `kind` is the WIT error case (a tool's
 * refusal: `invalid-argument`, `not-found`, `conflict`, `quota-exceeded`, `summariser`,
 * `storage`, ...; or `unknown-tool`, `invalid-arguments`), or `trap` for a call stopped by
 * its time limit or a failure of the tool logic. The message is the server's text. */
export class ToolError extends Error {
  constructor(kind, message) {
    super(message);
    this.name = 'ToolError';
    this.kind = kind;
  }
}

/** Throw it from a summariser to say why there is no summary. Any other error a summariser
 * throws reads as `failed` with its message. */
export class SummariserError extends Error {
  static KINDS = ['not-configured', 'unauthorized', 'unavailable', 'failed'];

  constructor(kind, message) {
    if (!SummariserError.KINDS.includes(kind)) {
      throw new TypeError(`unknown summariser error kind ${JSON.stringify(kind)}: the kinds are ${SummariserError.KINDS.join(', ')}`);
    }
    super(message);
    this.name = 'SummariserError';
    this.kind = kind;
  }
}

let loaded = null;

/** The component's core modules, compiled once per process (and shared with every worker),
 * and its tool list. */
function component() {
  if (loaded === null) {
    const load = coreModules(GEN);
    const modules = Object.fromEntries(readdirSync(fileURLToPath(GEN))
      .filter((name) => name.endsWith('.wasm')).map((name) => [name, load(name)]));
    loaded = { modules, tools: null };
  }
  return loaded;
}

/** jco's `limit-overrides` record from the server's `[limits]` names. */
function limitRecord(limits) {
  const record = {};
  for (const [name, value] of Object.entries(limits ?? {})) {
    if (!LIMIT_NAMES.includes(name)) {
      throw new TypeError(`unknown limit ${JSON.stringify(name)}: the limits are ${LIMIT_NAMES.join(', ')}`);
    }
    if (value === undefined || value === null) continue;
    if (!Number.isSafeInteger(Number(value)) || Number(value) < 0) {
      throw new TypeError(`limit ${name} must be a whole number of at least 0, not ${JSON.stringify(String(value))}`);
    }
    record[name.replace(/_(\w)/g, (_, c) => c.toUpperCase())] = U32_LIMITS.has(name) ? Number(value) : BigInt(value);
  }
  return record;
}

/** The `call-error` variant as one error: a tool's refusal keeps its WIT case. */
function toolError(error) {
  if (error.tag === 'tool') return new ToolError(error.val.error.tag, error.val.message);
  return new ToolError(error.tag, error.val);
}

export class Scratchpad {
  #options;
  #worker = null;
  #calls = new Map();
  #next = 0;
  #queue = Promise.resolve();
  #leaseToken = randomBytes(8).readBigUInt64BE(0).toString();

  /** The scratchpad's tools over the store in `folder` (created if missing).
   * - `summariser(system, prompt, maxTokens)`: your own model client (it may be async),
   *   asked only by summarize_file, whose summaries are cached per `summaryModel`. With none,
   *   summarize_file says it is not configured, as the server does without a key.
   * - `limits`: the server's `[limits]` by their config-file names (e.g. `{ versions_kept: 3 }`).
   * - `timeoutMs`: how long one call may run before it is stopped (CALL_TIMEOUT_MS).
   * One process (or worker) opens a folder at a time: another waits up to 5 s and then fails
   * with "in use by another process". Calls are taken one at a time, in order. */
  constructor(folder, { summariser = null, summaryModel = 'custom', limits = {}, timeoutMs = CALL_TIMEOUT_MS } = {}) {
    this.folder = resolve(folder);
    mkdirSync(this.folder, { recursive: true });
    this.#options = { summariser, summaryModel, limits: limitRecord(limits), timeoutMs };
  }

  /** The tools exactly as the server's MCP `tools/list` gives them (a fresh copy). */
  tools() {
    const { modules, tools } = component();
    if (tools === null) loaded.tools = listTools(modules);
    return structuredClone(loaded.tools);
  }

  /** Calls `tool` (its MCP name, e.g. `write_file`) with its MCP arguments; resolves to the
   * server's `structuredContent`, or rejects with a ToolError carrying the server's text. */
  async call(tool, args = {}) {
    let text;
    try {
      text = JSON.stringify(args ?? {});
    } catch (e) {
      // A BigInt, or a value that contains itself: the arguments cannot be sent as JSON.
      throw new ToolError('invalid-arguments', `invalid arguments for ${tool}: they are not JSON (${e.message})`);
    }
    const answer = await this.#send({ op: 'json', tool, args: text });
    return JSON.parse(answer);
  }

  /** The same tools bound to one agent: they take no `agent_id`, and no call through them
   * can name another agent. */
  forAgent(agentId) {
    return new AgentScratchpad(this, agentId);
  }

  /** A typed WIT export (`'tools', 'write-file'`), called with jco's values, for embedders
   * who want the WIT types rather than JSON. Resolves to the value; rejects with the WIT
   * error value as `{ payload }` when the export returns an error. */
  async export(iface, fn, ...args) {
    return this.#send({ op: 'typed', tool: `${iface}.${fn}`, args });
  }

  /** Closes the store (another process may open the folder at once) and the worker. The
   * next call opens them again. */
  async close() {
    if (this.#worker === null) return;
    await this.#send({ op: 'close' });
    const worker = this.#worker;
    this.#worker = null;
    await worker.terminate();
  }

  #send(request) {
    const run = this.#queue.then(() => this.#dispatch(request));
    this.#queue = run.catch(() => {});
    return run;
  }

  #dispatch(request) {
    const worker = this.#worker ?? this.#start();
    const id = this.#next++;
    worker.ref();
    return new Promise((resolve, reject) => {
      const call = { resolve, reject, request, timer: null };
      this.#calls.set(id, call);
      this.#arm(id);
      worker.postMessage({ id, ...request });
    }).finally(() => {
      clearTimeout(this.#calls.get(id)?.timer);
      this.#calls.delete(id);
      if (this.#calls.size === 0) this.#worker?.unref();
    });
  }

  /** (Re)starts call `id`'s clock: past it, the worker is stopped and the call fails. */
  #arm(id) {
    const call = this.#calls.get(id);
    clearTimeout(call.timer);
    call.timer = setTimeout(() => {
      const worker = this.#worker;
      this.#worker = null;
      worker?.terminate();
      call.reject(new ToolError('trap', `${call.request.tool ?? call.request.op} took more than ${this.#options.timeoutMs} ms and was stopped; nothing was changed`));
    }, this.#options.timeoutMs);
  }

  #start() {
    const { summariser, summaryModel, limits } = this.#options;
    const { modules } = component();
    const signal = new SharedArrayBuffer(4);
    const channel = summariser === null ? null : new MessageChannel();
    const worker = new Worker(new URL('./worker.js', import.meta.url), {
      workerData: {
        gen: new URL('scratchpad.js', GEN).href, modules, folder: this.folder,
        limits, leaseToken: this.#leaseToken, summaryModel, signal,
        summaries: channel?.port2,
      },
      transferList: channel === null ? [] : [channel.port2],
    });
    if (channel !== null) channel.port1.on('message', (request) => this.#summarise(channel.port1, signal, request));
    worker.on('message', ({ id, ok, err, trap }) => {
      const call = this.#calls.get(id);
      if (call === undefined) return;
      if (trap) {
        call.reject(new ToolError('trap', `the tool logic failed while running ${call.request.tool ?? call.request.op}; nothing was changed`));
      } else if (err !== undefined) {
        call.reject(call.request.op === 'json' ? toolError(err) : Object.assign(new ToolError('wit', 'the export returned an error'), { payload: err }));
      } else {
        call.resolve(ok);
      }
    });
    worker.on('error', () => {
      // The worker died (its module failed to load, it ran out of memory): every call in
      // flight fails, and the next call starts a new worker.
      if (this.#worker === worker) this.#worker = null;
      for (const call of this.#calls.values()) call.reject(new ToolError('trap', 'the tool logic\'s worker stopped; nothing was changed'));
    });
    worker.unref();
    this.#worker = worker;
    return worker;
  }

  /** Answers the worker's summary request with the user's summariser; the call's clock
   * stands still meanwhile. */
  async #summarise(port, signal, { system, prompt, maxTokens }) {
    const calls = [...this.#calls.keys()];
    for (const id of calls) clearTimeout(this.#calls.get(id).timer);
    let answer;
    try {
      const text = await this.#options.summariser(system, prompt, maxTokens);
      answer = typeof text === 'string' ? { text } : { error: { kind: 'failed', message: 'the summariser must answer with the summary\'s text' } };
    } catch (e) {
      answer = { error: e instanceof SummariserError ? { kind: e.kind, message: e.message } : { kind: 'failed', message: String(e?.message ?? e) || 'the summariser failed' } };
    }
    port.postMessage(answer);
    const waiting = new Int32Array(signal);
    Atomics.store(waiting, 0, 1);
    Atomics.notify(waiting, 0);
    for (const id of calls) if (this.#calls.has(id)) this.#arm(id);
  }
}

/** The tools of one Scratchpad bound to one agent (`Scratchpad.forAgent`): the same `call`
 * and `tools`, without `agent_id`, which is always the bound agent's. */
export class AgentScratchpad {
  constructor(pad, agentId) {
    this.pad = pad;
    this.agentId = agentId;
  }

  /** The tools as `tools/list` gives them, with `agent_id` taken out of every schema. */
  tools() {
    return this.pad.tools().map((tool) => {
      const schema = tool.inputSchema;
      if (schema.properties) delete schema.properties.agent_id;
      if (schema.required) schema.required = schema.required.filter((name) => name !== 'agent_id');
      return tool;
    });
  }

  /** Calls `tool` as the bound agent; arguments that name an agent are refused. */
  async call(tool, args = {}) {
    args ??= {};
    // Anything but an object goes as it is, for the tools to refuse by their rule: spread, an
    // array or a string would turn into arguments named 0, 1, 2...
    if (typeof args !== 'object' || Array.isArray(args)) return this.pad.call(tool, args);
    if ('agent_id' in args) {
      throw new ToolError('invalid-arguments',
        `invalid arguments for ${tool}: agent_id is not an argument here; these tools are bound to agent ${JSON.stringify(this.agentId)}`);
    }
    return this.pad.call(tool, { agent_id: this.agentId, ...args });
  }
}

/** The tool list, from an instance on this thread that touches no file. */
function listTools(modules) {
  const never = () => { throw { tag: 'failed', val: 'listing the tools asks for no summary' }; };
  const imports = new Proxy({ 'scratchpad:mcp/summariser': { model: () => 'none', summarise: never } }, { get: (own, key) => own[key] ?? wasi[key] });
  return JSON.parse(instantiate((name) => modules[name], imports).json.listTools());
}
