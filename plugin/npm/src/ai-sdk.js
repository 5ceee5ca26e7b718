// The scratchpad's tools as Vercel AI SDK tools, keyed by tool name.
//
//   import { generateText, stepCountIs } from 'ai';
//   import { Scratchpad } from 'scratchpad-tools';
//   import { tools } from 'scratchpad-tools/ai-sdk';
//
//   const pad = new Scratchpad('data').forAgent('planner');
//   await generateText({ model, tools: tools(pad), stopWhen: stepCountIs(5), prompt: '...' });
//
// Each tool keeps the component's own description and JSON schema (the component validates
// the arguments and names a wrong field). A refused call throws with the server's text, which
// the AI SDK hands the model as a tool error; the run goes on.

import { jsonSchema, tool } from 'ai';

/** An AI SDK tool for every tool of `pad` (a Scratchpad, or one bound by `forAgent`). */
export function tools(pad) {
  return Object.fromEntries(pad.tools().map((definition) => [definition.name, tool({
    description: definition.description,
    inputSchema: jsonSchema(definition.inputSchema),
    execute: (input) => pad.call(definition.name, input),
  })]));
}
