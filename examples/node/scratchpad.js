// The self-contained scratchpad component in Node: the tools and their SQLite store in one
// component, transpiled by jco into gen/standalone (`npm run transpile`). This file only
// gives it a folder, limits and (if you want summaries) a summariser, and calls it:
//
//   import { Scratchpad } from './scratchpad.js';
//   const pad = new Scratchpad('data');
//   pad.call('write-file', { 'agent-id': 'a', path: 'plan.md', content: '...', 'expected-version': null });
//   pad.close();
//
// Everything written is in data/scratchpad.db, and there after a restart (a store the server
// serves too). What Node can and cannot bound: a call cannot be interrupted (V8 has no fuel
// or epochs for a synchronous call; run the pad in a worker_thread and terminate it to stop
// one, and the journal rolls the call back on the next open), and its memory is capped only
// by the component's own maximum (4 GiB), not by the host. wasmtime-py and the server bound
// both per call.

import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { _setEnv } from '@bytecodealliance/preview2-shim/cli';
import { _setPreopens, types as filesystem } from '@bytecodealliance/preview2-shim/filesystem';
import { instantiate } from './gen/standalone/standalone.js';
import { camel, coreModules, fromJco, toJco, wasi } from './wit-values.js';

const getCoreModule = coreModules(new URL('./gen/standalone/', import.meta.url));

/** No model: summarize_file says so, and every other tool works. */
export const noSummariser = {
  model: () => 'none',
  summarise: (_request) => {
    throw { tag: 'not-configured', val: 'summarize_file needs a summariser: pass one to new Scratchpad(...)' };
  },
};

const LIMITS = ['max-files', 'max-log-entries', 'max-total-bytes', 'max-write-bytes',
  'max-log-entry-bytes', 'versions-kept', 'log-page-size', 'max-response-tokens'];

// wasi-libc asks for `mutate-directory` on every read-write open (SQLite's too), which
// preview2-shim 0.26 refuses as unsupported although it enforces no directory rights at all:
// drop the flag so SQLite can open its file. (wasmtime grants it on a writable preopen.)
const openAt = filesystem.Descriptor.prototype.openAt;
filesystem.Descriptor.prototype.openAt = function (pathFlags, path, openFlags, flags) {
  return openAt.call(this, pathFlags, path, openFlags, { ...flags, mutateDirectory: false });
};

// One lease token for this process: an instance made after a trap resumes the lease at once.
_setEnv({ SCRATCHPAD_LEASE_TOKEN: randomBytes(8).readBigUInt64BE(0).toString() });

/** A call the tools refused: `kind` is the WIT error case, the message the server's text. */
export class ToolError extends Error {
  constructor(kind, message) {
    super(message);
    this.kind = kind;
  }
}

export class Scratchpad {
  /** The component over the store in `folder`. preview2-shim's preopens are the process's:
   * one open Scratchpad per process at a time. `limits` sets the server's `[limits]` by
   * their WIT names (for example {'versions-kept': 3}); the rest keep their defaults. */
  constructor(folder, { summariser = noSummariser, limits = {} } = {}) {
    this.folder = resolve(folder);
    mkdirSync(this.folder, { recursive: true });
    this.summariser = summariser;
    // u32 limits are Numbers in jco, u64 ones BigInts.
    const u32 = new Set(['versions-kept', 'log-page-size']);
    this.limits = Object.fromEntries(LIMITS.map((name) => {
      const value = limits[name];
      const given = value === undefined || value === null ? undefined : value;
      return [camel(name), given === undefined ? undefined : (u32.has(name) ? Number(given) : BigInt(given))];
    }));
    this.instance = null;
  }

  #open() {
    _setPreopens({ '/store': this.folder });
    const imports = new Proxy({ 'scratchpad:mcp/summariser': this.summariser },
      { get: (own, key) => own[key] ?? wasi[key] });
    this.instance = instantiate(getCoreModule, imports);
    this.instance.settings.setLimits(this.limits);
  }

  /** Calls a tool (its WIT name) with arguments in the JSON form; returns {tag, val}. */
  call(tool, ...args) {
    if (this.instance === null) this.#open();
    try {
      return { tag: 'ok', val: fromJco(this.instance.tools[camel(tool)](...args.map(toJco))) };
    } catch (e) {
      if (e?.payload !== undefined) return { tag: 'err', val: fromJco(e.payload) };
      // A trap: this instance is done for; the next call opens a fresh one.
      this.instance = null;
      throw e;
    }
  }

  /** The tools exactly as the server's MCP `tools/list` gives them. */
  tools() {
    if (this.instance === null) this.#open();
    return JSON.parse(this.instance.json.listTools());
  }

  /** Calls a tool by its MCP name (`write_file`) with MCP arguments; returns the server's
   * `structuredContent`, or throws a ToolError with the server's text and its kind. */
  callJson(tool, args) {
    if (this.instance === null) this.#open();
    try {
      return JSON.parse(this.instance.json.call(tool, JSON.stringify(args)));
    } catch (e) {
      const error = e?.payload;
      if (error === undefined) {
        this.instance = null;
        throw e;
      }
      if (error.tag === 'tool') throw new ToolError(error.val.error.tag, error.val.message);
      throw new ToolError(error.tag, error.val);
    }
  }

  /** Closes the store: another process may open the folder at once. */
  close() {
    if (this.instance !== null) this.instance.settings.close();
    this.instance = null;
  }
}
