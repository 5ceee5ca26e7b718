// What a Node host of a jco-transpiled scratchpad component needs whatever its storage: the
// WASI imports from preview2-shim, and a way to load jco's core modules once each. The
// package's Scratchpad uses them, and so does a host that brings its own storage
// (examples/node/byo.js).

import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import * as shim from '@bytecodealliance/preview2-shim';

/** 'write-file' -> 'writeFile': jco's name for a WIT name. */
export const camel = (name) => name.replace(/-(\w)/g, (_, c) => c.toUpperCase());

/** 'wasi:cli/terminal-input' -> shim.cli.terminalInput: the WASI imports from preview2-shim. */
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
