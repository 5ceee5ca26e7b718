// What the package's tests share: a fresh folder, and the tools' calls each test makes.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Scratchpad } from 'scratchpad-tools';

/** The folders this test process made, removed when it exits (each run left a few dozen). */
const made = [];
process.on('exit', () => made.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

/** A store folder in a fresh temporary folder of its own. */
export const folder = () => {
  const dir = mkdtempSync(join(tmpdir(), 'scratchpad-tools-'));
  made.push(dir);
  return join(dir, 'store');
};

/** A document long enough to need a summary (over 8,000 characters). */
export const LONG = Array.from({ length: 200 }, (_, i) => `line ${i}: the scratchpad keeps what an agent has already read\n`).join('');

/** One legal call of every tool, in an order where each succeeds, for a bound agent. */
export const EVERY_TOOL = [
  ['write_file', { path: 'plan.md', content: 'one\ntwo\n' }],
  ['edit_file', { path: 'plan.md', base_version: 1, edits: [{ old: 'two', new: 'three' }] }],
  ['read_file', { path: 'plan.md' }],
  ['read_files', { paths: ['plan.md'] }],
  ['file_history', { path: 'plan.md' }],
  ['search', { query: 'three' }],
  ['append_log', { path: 'steps', entry: 'edited' }],
  ['read_log', { path: 'steps' }],
  ['list_files', {}],
  ['summarize_file', { path: 'plan.md' }],
  ['get_usage_stats', {}],
  ['forget_log', { path: 'steps' }],
  ['delete_file', { path: 'plan.md' }],
];

/** Through any adapter: a bound agent cannot reach another agent's file, and what one
 * Scratchpad wrote, a new one on the same folder reads. `run(pad, ...turns)` drives the
 * adapter's framework and resolves to each tool call's [ok, answer]. */
export async function boundAndPersisted(run) {
  const dir = folder();
  const pad = new Scratchpad(dir);
  await pad.call('write_file', { agent_id: 'other', path: 'secret.md', content: 'theirs' });
  await run(pad.forAgent('a'), [['write_file', { path: 'kept.md', content: 'kept' }]]);
  const [secret, listed] = await run(pad.forAgent('a'), [['read_file', { path: 'secret.md' }], ['list_files', {}]]);
  assert.deepEqual([secret[0], String(secret[1]).includes('no file at path "secret.md"')], [false, true]);
  assert.deepEqual(listed[1].files.map((f) => f.path), ['kept.md']);
  await pad.close();
  const again = new Scratchpad(dir);
  const [[ok, read]] = await run(again.forAgent('a'), [['read_file', { path: 'kept.md' }]]);
  assert.deepEqual([ok, read.content], [true, 'kept']);
  await again.close();
}
