// The scratchpad component in Node: transpiled by jco (`npm run transpile`), instantiated
// fresh for every call with a storage and a summariser of your own.
//
//   import { Scratchpad } from './scratchpad.js';
//   const pad = new Scratchpad();
//   pad.call('write-file', { 'agent-id': 'a', path: 'plan.md', content: '...' });
//
// Values go in and come out in one JSON form (see tests/conformance/cases.json): records
// keyed by WIT field names, option none as null, variants and results as {tag, val}.

import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import * as shim from '@bytecodealliance/preview2-shim';
import { instantiate } from './gen/scratchpad.js';
import { MemoryStorage } from './storage.js';

const GEN = new URL('./gen/', import.meta.url);
const modules = new Map();
const getCoreModule = (name) => {
  if (!modules.has(name)) {
    modules.set(name, new WebAssembly.Module(readFileSync(fileURLToPath(new URL(name, GEN)))));
  }
  return modules.get(name);
};

// 'wasi:cli/terminal-input' -> shim.cli.terminalInput: the WASI imports from preview2-shim.
const camel = (name) => name.replace(/-(\w)/g, (_, c) => c.toUpperCase());
const wasi = new Proxy({}, {
  get: (_, key) => {
    const [, pkg, iface] = /^wasi:([\w-]+)\/([\w-]+)$/.exec(key);
    return shim[pkg][camel(iface)];
  },
});

/** A summariser that always answers the same: call your model here. It reports an error by
 * throwing the `summariser-error` value, e.g. when no API key is set. */
export const fixedSummariser = {
  model: () => 'conformance-model',
  summarise: (_request) => 'A fixed summary.',
};

/** One with no key: every request fails as `not-configured`. */
export const unconfiguredSummariser = {
  model: () => 'conformance-model',
  summarise: (_request) => {
    throw { tag: 'not-configured', val: 'no API key' };
  },
};

export class Scratchpad {
  constructor(storage = new MemoryStorage(), summariser = fixedSummariser) {
    this.storage = storage;
    this.summariser = summariser;
  }

  /** Calls a tool (its WIT name) on a fresh instance; a failed call changes nothing. */
  call(tool, ...args) {
    const agent = typeof args[0] === 'string' ? args[0] : args[0]['agent-id'];
    const saved = structuredClone(this.storage.state);
    const imports = new Proxy({
      'scratchpad:mcp/storage': this.storage.forAgent(agent),
      'scratchpad:mcp/summariser': this.summariser,
    }, { get: (own, key) => own[key] ?? wasi[key] });
    const { tools } = instantiate(getCoreModule, imports);
    try {
      const val = tools[camel(tool)](...args.map(toJco));
      this.storage.counters(agent).totalOperations += 1n;
      return { tag: 'ok', val: fromJco(val) };
    } catch (e) {
      this.storage.state = saved;
      if (e?.payload === undefined) throw e; // a trap, not a tool error
      return { tag: 'err', val: fromJco(e.payload) };
    }
  }
}

const kebab = (name) => name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);

/** JSON form -> jco: camelCase record keys, BigInt numbers (every number the tools take is
 * a u64), undefined for none. An object with a `tag` is a variant. */
export function toJco(value) {
  if (value === null) return undefined;
  if (typeof value === 'number') return BigInt(value);
  if (Array.isArray(value)) return value.map(toJco);
  if (typeof value !== 'object') return value;
  if ('tag' in value) return { tag: value.tag, val: toJco(value.val ?? null) };
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [camel(k), toJco(v)]));
}

/** jco -> JSON form. */
export function fromJco(value) {
  if (value === undefined) return null;
  if (typeof value === 'bigint') return Number(value);
  if (Array.isArray(value)) return value.map(fromJco);
  if (value === null || typeof value !== 'object') return value;
  if ('tag' in value) {
    return value.val === undefined ? { tag: value.tag } : { tag: value.tag, val: fromJco(value.val) };
  }
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [kebab(k), fromJco(v)]));
}
