// One Scratchpad's component, on a worker thread of its own. The main thread (index.js)
// sends one call at a time and may terminate this thread when a call runs past its time;
// the store's journal then rolls that call back when the next worker opens the folder.
//
// Why a worker: V8 cannot interrupt a synchronous WebAssembly call, preview2-shim's preopens
// belong to the thread that set them, and the user's summariser is asynchronous while the
// component's import is not. Here the component may block (Atomics.wait) while the main
// thread awaits the summariser, and each Scratchpad has its own folder.

import { parentPort, receiveMessageOnPort, workerData } from 'node:worker_threads';
import { _setEnv } from '@bytecodealliance/preview2-shim/cli';
import { _setPreopens, types as filesystem } from '@bytecodealliance/preview2-shim/filesystem';
import { camel, wasi } from './jco.js';

const { gen, modules, folder, limits, leaseToken, summaryModel, summaries, signal } = workerData;
const { instantiate } = await import(gen);

// wasi-libc asks for `mutate-directory` on every read-write open (SQLite's too), which
// preview2-shim 0.26 refuses as unsupported although it enforces no directory rights at all:
// drop the flag so SQLite can open its file. (wasmtime grants it on a writable preopen.)
const openAt = filesystem.Descriptor.prototype.openAt;
filesystem.Descriptor.prototype.openAt = function (pathFlags, path, openFlags, flags) {
  return openAt.call(this, pathFlags, path, openFlags, { ...flags, mutateDirectory: false });
};
_setEnv({ SCRATCHPAD_LEASE_TOKEN: leaseToken });
_setPreopens({ '/store': folder });

const waiting = new Int32Array(signal);

/** The summariser import: asks the main thread, and blocks until it answers. */
const summariser = {
  model: () => summaryModel ?? 'none',
  summarise: (request) => {
    if (summaries === undefined) {
      throw { tag: 'not-configured', val: 'summarize_file needs a summariser: pass one to new Scratchpad(folder, { summariser })' };
    }
    Atomics.store(waiting, 0, 0);
    summaries.postMessage({ system: request.system, prompt: request.prompt, maxTokens: request.maxTokens });
    Atomics.wait(waiting, 0, 0);
    const { text, error } = receiveMessageOnPort(summaries).message;
    if (error !== undefined) throw { tag: error.kind, val: error.message };
    return text;
  },
};

let instance = null;

function open() {
  const imports = new Proxy({ 'scratchpad:mcp/summariser': summariser }, { get: (own, key) => own[key] ?? wasi[key] });
  instance = instantiate((name) => modules[name], imports);
  instance.settings.setLimits(limits);
  return instance;
}

/** Runs one request; a trap drops the instance, so the next request starts a fresh one. */
function run({ op, tool, args }) {
  if (op === 'close') {
    if (instance !== null) instance.settings.close();
    instance = null;
    return { ok: null };
  }
  const live = instance ?? open();
  try {
    if (op === 'json') return { ok: live.json.call(tool, args) };
    // A typed WIT export: `tools.write-file`, with jco's values.
    const [iface, name] = tool.split('.');
    return { ok: live[camel(iface)][camel(name)](...args) };
  } catch (e) {
    if (e?.payload !== undefined) return { err: e.payload };
    instance = null;
    return { trap: true };
  }
}

parentPort.on('message', ({ id, ...request }) => parentPort.postMessage({ id, ...run(request) }));
