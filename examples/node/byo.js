// Bring your own storage: the tool-logic component (`scratchpad-mcp component`) in Node,
// transpiled by jco into gen/byo (`npm run transpile`), instantiated fresh for every call
// with a storage and a summariser of your own (here storage.js, in memory: the test double
// the shared cases hold to the same contract as the real store). To keep data, use the
// self-contained component instead: the scratchpad-tools package (plugin/npm) carries it.

import { instantiate } from './gen/byo/scratchpad.js';
import { camel, coreModules, wasi } from 'scratchpad-tools/jco';
import { fixedSummariser, fromJco, toJco } from './wit-values.js';
import { MemoryStorage } from './storage.js';

const getCoreModule = coreModules(new URL('./gen/byo/', import.meta.url));

export class ByoScratchpad {
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

  /** Nothing to close: the storage is this object's. */
  close() {}
}
