// Runs the shared conformance cases against the component in Node (jco).
//   node conformance.js ../../tests/conformance/cases.json

import { readFileSync } from 'node:fs';
import { Scratchpad, fixedSummariser, unconfiguredSummariser } from './scratchpad.js';
import { MemoryStorage } from './storage.js';

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

const cases = JSON.parse(readFileSync(process.argv[2], 'utf8'));
for (const row of cases.matcher) {
  if (matches(row.want, row.got) !== row.matches) {
    console.error(`the matcher breaks the shared rule: ${JSON.stringify(row)}`);
    process.exit(1);
  }
}
const steps = cases.groups.reduce((n, group) => n + group.steps.length, 0);
let calls = 0;
for (const group of cases.groups) {
  const summariser = group.summariser === 'not-configured' ? unconfiguredSummariser : fixedSummariser;
  const pad = new Scratchpad(new MemoryStorage(group.limits ?? {}), summariser);
  group.steps.forEach((step, i) => {
    const got = pad.call(step.call, ...step.args);
    if (!matches(step.expect, got)) {
      console.error(`${group.name} step ${i} (${step.call}):\n  want ${JSON.stringify(step.expect)}\n  got  ${JSON.stringify(got)}`);
      process.exit(1);
    }
    calls += 1;
  });
}
if (calls !== steps) {
  console.error(`${calls} of ${steps} steps ran`);
  process.exit(1);
}
console.log(`conformance: ${calls} calls, all as expected (Node, jco)`);
