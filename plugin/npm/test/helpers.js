// What the package's tests share: a fresh folder, and the tools' calls each test makes.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const folder = () => join(mkdtempSync(join(tmpdir(), 'scratchpad-tools-')), 'store');

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
