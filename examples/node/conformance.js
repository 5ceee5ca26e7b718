// Runs the shared conformance cases in Node (jco).
//   node conformance.js ../../tests/conformance/cases.json [--standalone] [--byo]
//
// --standalone: the self-contained component through the scratchpad-tools package
// (plugin/npm) on real files, each group in a new folder, restarted halfway (a new Scratchpad
// on the same folder), so every answer after the restart comes from what the first half left
// on disk.
// --byo: the tool-logic component over storage.js, the in-memory test double that holds
// bring-your-own storage to the same contract.

import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fixedSummariser, fromJco, toJco, unconfiguredSummariser } from './wit-values.js';

// The cases' matching rule (see their "about"): "*" matches anything, objects key for key,
// arrays item by item, a number only an equal integer.
function matches(want, got) {
  if (want === '*') return true;
  if (Array.isArray(want)) {
    return Array.isArray(got) && want.length === got.length && want.every((w, i) => matches(w, got[i]));
  }
  if (want !== null && typeof want === 'object') {
    if (got === null || typeof got !== 'object' || Array.isArray(got)) return false;
    const keys = Object.keys(want);
    return keys.length === Object.keys(got).length && keys.every((k) => k in got && matches(want[k], got[k]));
  }
  if (Number.isInteger(want)) return Number.isInteger(got) && want === got;
  return want === got;
}

const [casesFile, ...modes] = process.argv.slice(2);
const cases = JSON.parse(readFileSync(casesFile, 'utf8'));
for (const row of cases.matcher) {
  if (matches(row.want, row.got) !== row.matches) {
    console.error(`the matcher breaks the shared rule: ${JSON.stringify(row)}`);
    process.exit(1);
  }
}
const steps = cases.groups.reduce((n, group) => n + group.steps.length, 0);
const summariserOf = (group) => (group.summariser === 'not-configured' ? unconfiguredSummariser : fixedSummariser);

const runs = [];
if (modes.includes('--byo')) {
  const { ByoScratchpad } = await import('./byo.js');
  const { MemoryStorage } = await import('./storage.js');
  runs.push(['bring your own storage', (group) => new ByoScratchpad(new MemoryStorage(group.limits ?? {}), summariserOf(group)), false]);
}
const folders = mkdtempSync(join(tmpdir(), 'scratchpad-conformance-'));
if (modes.includes('--standalone')) {
  const { Scratchpad, SummariserError } = await import('scratchpad-tools');
  // The same summariser as the package's callback.
  const summary = (group) => async () => {
    if (group.summariser === 'not-configured') throw new SummariserError('not-configured', 'no API key');
    return 'A fixed summary.';
  };
  const snake = (limits) => Object.fromEntries(Object.entries(limits ?? {}).map(([k, v]) => [k.replaceAll('-', '_'), v]));
  runs.push(['self-contained, on files, restarted halfway', (group) => {
    const pad = new Scratchpad(join(folders, String(cases.groups.indexOf(group))),
      { summariser: summary(group), summaryModel: 'conformance-model', limits: snake(group.limits) });
    // The package's typed WIT exports, with the cases' WIT names and values.
    return {
      call: (tool, ...args) => pad.export('tools', tool, ...args.map(toJco)).then(
        (val) => ({ tag: 'ok', val: fromJco(val) }),
        (e) => { if (e.payload === undefined) throw e; return { tag: 'err', val: fromJco(e.payload) }; }),
      close: () => pad.close(),
    };
  }, true]);
}
if (runs.length === 0) {
  console.error('name a component: --standalone, --byo or both');
  process.exit(2);
}
try {
  for (const [label, open, restart] of runs) {
    let calls = 0;
    for (const group of cases.groups) {
      let pad = open(group);
      const half = Math.floor(group.steps.length / 2);
      for (const [i, step] of group.steps.entries()) {
        if (restart && i === half) {
          await pad.close();
          pad = open(group);
        }
        const got = await pad.call(step.call, ...step.args);
        if (!matches(step.expect, got)) {
          console.error(`${label}: ${group.name} step ${i} (${step.call}):\n  want ${JSON.stringify(step.expect)}\n  got  ${JSON.stringify(got)}`);
          process.exit(1);
        }
        calls += 1;
      }
      await pad.close();
    }
    if (calls !== steps) {
      console.error(`${calls} of ${steps} steps ran`);
      process.exit(1);
    }
    console.log(`conformance: ${calls} calls, all as expected (Node, jco, ${label})`);
  }
} finally {
  rmSync(folders, { recursive: true, force: true });
}
