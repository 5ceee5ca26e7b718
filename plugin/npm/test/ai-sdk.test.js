// The AI SDK tools, driven by generateText with the AI SDK's own mock language model
// (`ai/test`): real tool calls through the AI SDK's loop, a real store, no network.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { generateText, stepCountIs } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { Scratchpad } from 'scratchpad-tools';
import { tools } from 'scratchpad-tools/ai-sdk';
import { EVERY_TOOL, boundAndPersisted, folder } from './helpers.js';

const usage = { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 1, text: 1, reasoning: 0 } };

/** A model that makes each turn's tool calls, then says "done". */
function scripted(...turns) {
  let step = 0;
  return new MockLanguageModelV3({
    doGenerate: async () => {
      const calls = turns[step++];
      if (calls === undefined) {
        return { content: [{ type: 'text', text: 'done' }], finishReason: { unified: 'stop', raw: 'stop' }, usage, warnings: [] };
      }
      return {
        content: calls.map(([toolName, args], i) => ({ type: 'tool-call', toolCallId: `call-${step}-${i}`, toolName, input: JSON.stringify(args) })),
        finishReason: { unified: 'tool-calls', raw: 'tool_calls' }, usage, warnings: [],
      };
    },
  });
}

async function run(pad, ...turns) {
  const model = scripted(...turns);
  const result = await generateText({ model, tools: tools(pad), stopWhen: stepCountIs(turns.length + 1), prompt: 'go' });
  const outcomes = result.steps.flatMap((s) => s.content).filter((part) => part.type === 'tool-result' || part.type === 'tool-error');
  return { result, outcomes, model };
}

test('every tool is offered with the component\'s schema and callable through generateText', async () => {
  const pad = new Scratchpad(folder());
  const planner = pad.forAgent('planner');
  const offered = tools(planner);
  assert.deepEqual(Object.keys(offered).sort(), pad.tools().map((t) => t.name).sort());
  for (const definition of planner.tools()) {
    assert.deepEqual(offered[definition.name].inputSchema.jsonSchema, definition.inputSchema);
  }
  const { result, outcomes } = await run(planner, ...EVERY_TOOL.map((call) => [call]));
  assert.equal(result.text, 'done');
  assert.deepEqual(outcomes.map((o) => [o.type, o.toolName]), EVERY_TOOL.map(([name]) => ['tool-result', name]));
  assert.equal(outcomes[2].output.content, 'one\nthree\n');
  await pad.close();
});

test('errors reach the model as tool errors and the run goes on', async () => {
  const pad = new Scratchpad(folder());
  const { result, outcomes, model } = await run(pad.forAgent('planner'),
    [['read_file', { path: 'missing.md' }]],
    [['read_file', { path: 'x', agent_id: 'other' }]]);
  assert.equal(result.text, 'done');
  assert.deepEqual(outcomes.map((o) => o.type), ['tool-error', 'tool-error']);
  assert.match(String(outcomes[0].error.message), /no file at path "missing.md" for agent "planner"/);
  assert.match(String(outcomes[1].error.message), /bound to agent "planner"/);
  // The model's next step is sent the server's text as the tool's result.
  const sent = JSON.stringify(model.doGenerateCalls[1].prompt);
  assert.ok(sent.includes('no file at path \\"missing.md\\"'), sent);
  await pad.close();
});

test('a bound agent cannot reach another agent\'s data; data persists for new tools on the folder', () =>
  boundAndPersisted(async (pad, ...turns) => (await run(pad, ...turns)).outcomes
    .map((o) => (o.type === 'tool-result' ? [true, o.output] : [false, o.error.message]))));
