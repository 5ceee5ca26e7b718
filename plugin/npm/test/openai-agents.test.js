// The OpenAI Agents SDK tools, driven by the SDK's own Runner with a scripted model (the SDK's
// `Model` interface answering with its protocol items): real tool calls, a real store, no
// network.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Agent, Runner, Usage, setTracingDisabled } from '@openai/agents';
import { Scratchpad } from 'scratchpad-tools';
import { tools } from 'scratchpad-tools/openai-agents';
import { EVERY_TOOL, boundAndPersisted, folder } from './helpers.js';

setTracingDisabled(true);

/** Makes each turn's tool calls, then says "done"; keeps what the tools answered. */
class Scripted {
  constructor(turns) {
    this.turns = [...turns];
    this.outputs = [];
  }

  async getResponse(request) {
    if (Array.isArray(request.input)) {
      this.outputs = request.input.filter((item) => item.type === 'function_call_result')
        .map((item) => (typeof item.output === 'string' ? item.output : item.output.text));
    }
    const calls = this.turns.shift();
    if (calls === undefined) {
      return { usage: new Usage(), output: [{ type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'done' }] }] };
    }
    return {
      usage: new Usage(),
      output: calls.map(([name, args], i) => ({ type: 'function_call', callId: `call-${this.turns.length}-${i}`, name, arguments: JSON.stringify(args), status: 'completed' })),
    };
  }

  // eslint-disable-next-line require-yield
  async *getStreamedResponse() {
    throw new Error('the tests run the agent without streaming');
  }
}

async function run(pad, ...turns) {
  const model = new Scripted(turns);
  const result = await new Runner().run(new Agent({ name: 'planner', model, tools: tools(pad) }), 'go', { maxTurns: turns.length + 2 });
  return { result, outputs: model.outputs };
}

test('every tool is offered with the component\'s schema and callable through the Runner', async () => {
  const pad = new Scratchpad(folder());
  const planner = pad.forAgent('planner');
  const offered = Object.fromEntries(tools(planner).map((t) => [t.name, t]));
  assert.deepEqual(Object.keys(offered).sort(), pad.tools().map((t) => t.name).sort());
  for (const definition of planner.tools()) {
    assert.deepEqual(offered[definition.name].parameters, definition.inputSchema);
    assert.equal(offered[definition.name].strict, false);
  }
  const { result, outputs } = await run(planner, ...EVERY_TOOL.map((call) => [call]));
  assert.equal(result.finalOutput, 'done');
  assert.equal(outputs.length, EVERY_TOOL.length);
  assert.deepEqual(outputs.filter((o) => o.startsWith('error: ')), []);
  assert.equal(JSON.parse(outputs[2]).content, 'one\nthree\n');
  await pad.close();
});

test('errors reach the model as tool output and the run goes on', async () => {
  const pad = new Scratchpad(folder());
  const { result, outputs } = await run(pad.forAgent('planner'),
    [['read_file', { path: 'missing.md' }]],
    [['read_file', { path: 'x', agent_id: 'other' }]],
    [['write_file', { path: 'x' }]]);
  assert.equal(result.finalOutput, 'done');
  assert.equal(outputs[0], 'error: no file at path "missing.md" for agent "planner"');
  assert.match(outputs[1], /bound to agent "planner"/);
  assert.match(outputs[2], /^error: invalid arguments for write_file: missing field `content`/);
  await pad.close();
});

test('a bound agent cannot reach another agent\'s data; data persists for new tools on the folder', () =>
  boundAndPersisted(async (pad, ...turns) => (await run(pad, ...turns)).outputs
    .map((o) => (o.startsWith('error: ') ? [false, o] : [true, JSON.parse(o)]))));
