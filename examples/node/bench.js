// Times the self-contained component through the scratchpad-tools package (jco, on its
// worker thread): start to first result, then write_file and read_file since a version per
// call (a 50-line file, one line changed per write), by MCP name and arguments. Prints rows of
// `scripts/bench`'s table, beside the native server's rows over stdio from the same run.
//   node bench.js [CALLS]

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
  const { Scratchpad } = await import('scratchpad-tools');
  const store = new Scratchpad(folder);
  const pad = store.forAgent('bench');
  await pad.call('get_usage_stats');
  const start = performance.now() - t;
  await pad.call('write_file', { path: 'plan.md', content: lines(0) });
  const writes = [];
  const reads = [];
  for (let n = 0; n < calls; n += 1) {
    t = performance.now();
    const w = await pad.call('write_file', { path: 'plan.md', content: lines((n % 50) + 1) });
    writes.push(performance.now() - t);
    t = performance.now();
    const r = await pad.call('read_file', { path: 'plan.md', since_version: w.version - 1 });
    reads.push(performance.now() - t);
    if (r.diff === undefined) throw new Error(JSON.stringify(r));
  }
  await store.close();
  const row = (what, figure, reference) => console.log(`| ${what} | ${figure} | ${reference} |`);
  row('npm package: start to first result', `${start.toFixed(0)} ms`, 'import, compiling the core modules and the worker\'s start');
  row('npm package: write_file (50 lines, one changed)', `${median(writes).toFixed(2)} ms`, `p50 of ${calls}; beside the server's write_file row`);
  row('npm package: read_file since a version', `${median(reads).toFixed(2)} ms`, `p50 of ${calls}; beside the server's read_file row`);
} finally {
  rmSync(folder, { recursive: true, force: true });
}
