// Times the self-contained component in Node (jco): start to first result, then write_file
// and read_file since a version per call (a 50-line file, one line changed per write).
//   node bench.js [CALLS]   (after npm run transpile)

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';

const calls = Number(process.argv[2] ?? 300);
const lines = (changed) => Array.from({ length: 50 }, (_, i) => `line ${i + 1} of the plan${i + 1 === changed ? ' (changed)' : ''}\n`).join('');
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const folder = mkdtempSync(join(tmpdir(), 'scratchpad-bench-'));
try {
  let t = performance.now();
  const { Scratchpad } = await import('./scratchpad.js');
  const pad = new Scratchpad(folder);
  const first = pad.call('get-usage-stats', 'bench');
  const start = performance.now() - t;
  if (first.tag !== 'ok') throw new Error(JSON.stringify(first));
  pad.call('write-file', { 'agent-id': 'bench', path: 'plan.md', content: lines(0), 'expected-version': null });
  const writes = [];
  const reads = [];
  for (let n = 0; n < calls; n += 1) {
    t = performance.now();
    const w = pad.call('write-file', { 'agent-id': 'bench', path: 'plan.md', content: lines((n % 50) + 1), 'expected-version': null });
    writes.push(performance.now() - t);
    if (w.tag !== 'ok') throw new Error(JSON.stringify(w));
    t = performance.now();
    const r = pad.call('read-file', { 'agent-id': 'bench', path: 'plan.md', 'since-version': w.val.version - 1, 'full-diff': false, offset: null, limit: null, column: null });
    reads.push(performance.now() - t);
    if (r.tag !== 'ok' || r.val.body.tag !== 'diff') throw new Error(JSON.stringify(r));
  }
  pad.close();
  console.log(`Node (jco): start to first result ${start.toFixed(0)} ms (compiling included); write_file ${median(writes).toFixed(2)} ms, read_file since a version ${median(reads).toFixed(2)} ms (medians of ${calls})`);
} finally {
  rmSync(folder, { recursive: true, force: true });
}
