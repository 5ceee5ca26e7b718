// What both Node hosts share: the WASI imports from preview2-shim, a way to load jco's core
// modules, and values at the component boundary in one JSON form (see
// tests/conformance/cases.json): records keyed by WIT field names, option none as null,
// variants and results as {tag, val}.

import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import * as shim from '@bytecodealliance/preview2-shim';

// 'wasi:cli/terminal-input' -> shim.cli.terminalInput: the WASI imports from preview2-shim.
export const camel = (name) => name.replace(/-(\w)/g, (_, c) => c.toUpperCase());
export const wasi = new Proxy({}, {
  get: (_, key) => {
    const [, pkg, iface] = /^wasi:([\w-]+)\/([\w-]+)$/.exec(key);
    return shim[pkg][camel(iface)];
  },
});

/** jco's `getCoreModule` for the transpiled component in `dir` (a URL), compiling each core
 * module once. */
export function coreModules(dir) {
  const modules = new Map();
  return (name) => {
    if (!modules.has(name)) {
      modules.set(name, new WebAssembly.Module(readFileSync(fileURLToPath(new URL(name, dir)))));
    }
    return modules.get(name);
  };
}

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
