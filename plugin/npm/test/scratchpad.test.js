// The package's own API on the real component over a real folder: calls, tools, agents bound
// or not, errors, persistence, limits, the time bound and the summariser callback.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { Scratchpad, SummariserError, ToolError } from 'scratchpad-tools';
import { EVERY_TOOL, LONG, folder } from './helpers.js';

const refused = (kind, text) => (e) => {
  assert.ok(e instanceof ToolError, `not a ToolError: ${e}`);
  assert.equal(e.kind, kind, e.message);
  assert.ok(e.message.includes(text), e.message);
  return true;
};

test('a call answers the server\'s structuredContent, a read since a version a diff', async () => {
  const pad = new Scratchpad(folder());
  const lines = Array.from({ length: 50 }, (_, i) => `line ${i} of the plan\n`);
  assert.deepEqual(await pad.call('write_file', { agent_id: 'a', path: 'plan.md', content: lines.join('') }),
    { path: 'plan.md', version: 1, bytes: 990, unchanged: false });
  lines[20] = 'line 20, changed\n';
  await pad.call('write_file', { agent_id: 'a', path: 'plan.md', content: lines.join('') });
  const since = await pad.call('read_file', { agent_id: 'a', path: 'plan.md', since_version: 1 });
  assert.equal(since.current_version, 2);
  assert.equal(since.content, undefined);
  assert.ok(JSON.stringify(since.diff).includes('line 20, changed'));
  await pad.close();
});

test('tools are the server\'s list; every one is callable by a bound agent', async () => {
  const pad = new Scratchpad(folder());
  const tools = pad.tools();
  assert.equal(tools.length, 13);
  assert.deepEqual(new Set(EVERY_TOOL.map(([name]) => name)), new Set(tools.map((t) => t.name)));
  tools[0].name = 'changed';
  assert.notEqual(pad.tools()[0].name, 'changed', 'tools() hands out its own copy');
  const planner = pad.forAgent('planner');
  for (const [name, args] of EVERY_TOOL) await planner.call(name, args);
  await assert.rejects(planner.call('read_file', { path: 'plan.md' }), refused('not-found', 'plan.md'), 'deleted last');
  await pad.close();
});

test('a bound agent has no agent_id and cannot name another', async () => {
  const pad = new Scratchpad(folder());
  await pad.call('write_file', { agent_id: 'other', path: 'secret.md', content: 'theirs' });
  const planner = pad.forAgent('planner');
  for (const tool of planner.tools()) {
    assert.ok(!('agent_id' in (tool.inputSchema.properties ?? {})), tool.name);
    assert.ok(!(tool.inputSchema.required ?? []).includes('agent_id'), tool.name);
  }
  await assert.rejects(planner.call('read_file', { agent_id: 'other', path: 'secret.md' }),
    refused('invalid-arguments', 'bound to agent "planner"'));
  await assert.rejects(planner.call('read_file', { path: 'secret.md' }), refused('not-found', 'secret.md'));
  assert.deepEqual((await planner.call('list_files', {})).files, []);
  await pad.close();
});

test('errors carry the WIT case and the server\'s text, and change nothing', async () => {
  const pad = new Scratchpad(folder());
  await assert.rejects(pad.call('nope', {}), refused('unknown-tool', 'unknown tool "nope"'));
  await assert.rejects(pad.call('read_file', { agent_id: 'a' }), refused('invalid-arguments', 'missing field `path`'));
  await assert.rejects(pad.call('write_file', { agent_id: 'a', path: '../x', content: '' }), refused('invalid-argument', '../x'));
  await assert.rejects(pad.call('write_file', { agent_id: 'a', path: 'x', content: '', expected_version: 3 }), refused('conflict', 'version'));
  assert.deepEqual((await pad.call('list_files', { agent_id: 'a' })).files, []);
  await pad.close();
});

test('arguments that are no JSON object are refused by the rule, changing nothing', async () => {
  const pad = new Scratchpad(folder());
  const planner = pad.forAgent('planner');
  const rule = (got) => `invalid arguments for write_file: the arguments must be one JSON object, of named arguments (got ${got})`;
  // Spread, an array or a string used to become arguments named 0, 1, 2...
  await assert.rejects(pad.call('write_file', ['a', 'x', 'written']), refused('invalid-arguments', rule('an array')));
  await assert.rejects(planner.call('write_file', ['x', 'written']), refused('invalid-arguments', rule('an array')));
  await assert.rejects(planner.call('write_file', 'xy'), refused('invalid-arguments', rule('a string')));
  await assert.rejects(planner.call('write_file', { path: 'x', content: 1n }),
    refused('invalid-arguments', 'invalid arguments for write_file: they are not JSON ('));
  assert.deepEqual((await pad.call('list_files', { agent_id: 'a' })).files, []);
  assert.deepEqual((await planner.call('list_files', {})).files, []);
  await pad.close();
});

test('data persists across a new Scratchpad on the folder, and two folders live side by side', async () => {
  const [one, two] = [folder(), folder()];
  const first = new Scratchpad(one);
  const other = new Scratchpad(two);
  await first.call('write_file', { agent_id: 'a', path: 'kept.md', content: 'still here' });
  await other.call('write_file', { agent_id: 'a', path: 'kept.md', content: 'the other folder' });
  await first.close();
  await other.close();
  const second = new Scratchpad(one);
  assert.equal((await second.call('read_file', { agent_id: 'a', path: 'kept.md' })).content, 'still here');
  await second.close();
  assert.ok(existsSync(join(one, 'scratchpad.db')));
});

test('limits take the server\'s names; unknown ones are refused', async () => {
  const pad = new Scratchpad(folder(), { limits: { max_write_bytes: 4 } });
  await assert.rejects(pad.call('write_file', { agent_id: 'a', path: 'x', content: '12345' }), refused('invalid-argument', '4'));
  await pad.close();
  assert.throws(() => new Scratchpad(folder(), { limits: { max_writes: 4 } }), /unknown limit "max_writes"/);
  assert.throws(() => new Scratchpad(folder(), { limits: { versions_kept: -1 } }), /versions_kept must be a whole number/);
});

test('a call past its time is stopped, changes nothing, and the next call works', async () => {
  const dir = folder();
  const pad = new Scratchpad(dir, { timeoutMs: 1 });
  await assert.rejects(pad.call('write_file', { agent_id: 'a', path: 'x', content: 'y\n'.repeat(100_000) }),
    refused('trap', 'took more than 1 ms and was stopped'));
  await pad.close();
  const again = new Scratchpad(dir);
  assert.deepEqual((await again.call('list_files', { agent_id: 'a' })).files, []);
  await again.call('write_file', { agent_id: 'a', path: 'x', content: 'fits' });
  await again.close();
});

test('the summariser callback (async) is asked once per version', async () => {
  const asked = [];
  const summariser = async (system, prompt, maxTokens) => {
    asked.push({ system, prompt, maxTokens });
    await new Promise((resolve) => setTimeout(resolve, 20));
    return 'A summary of the document.';
  };
  const pad = new Scratchpad(folder(), { summariser, summaryModel: 'my-model', timeoutMs: 5_000 });
  await pad.call('write_file', { agent_id: 'a', path: 'doc.md', content: LONG });
  const first = await pad.call('summarize_file', { agent_id: 'a', path: 'doc.md' });
  const again = await pad.call('summarize_file', { agent_id: 'a', path: 'doc.md' });
  assert.equal(first.summary, 'A summary of the document.');
  assert.equal(again.summary, first.summary);
  assert.equal(asked.length, 1, 'the second answer came from the cache');
  assert.ok(asked[0].prompt.includes('line 199') && asked[0].maxTokens > 0);
  await pad.close();
});

test('a failing summariser fails the call, not the process', async () => {
  for (const [error, text] of [[new SummariserError('unavailable', 'the model is overloaded'), 'overloaded'],
    [new Error('connection reset'), 'connection reset']]) {
    const pad = new Scratchpad(folder(), { summariser: async () => { throw error; } });
    await pad.call('write_file', { agent_id: 'a', path: 'doc.md', content: LONG });
    await assert.rejects(pad.call('summarize_file', { agent_id: 'a', path: 'doc.md' }), refused('summariser', text));
    assert.equal((await pad.call('read_file', { agent_id: 'a', path: 'doc.md' })).current_version, 1);
    await pad.close();
  }
});
