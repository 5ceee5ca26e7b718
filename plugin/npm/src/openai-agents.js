// The scratchpad's tools as OpenAI Agents SDK function tools.
//
//   import { Agent } from '@openai/agents';
//   import { Scratchpad } from 'scratchpad-tools';
//   import { tools } from 'scratchpad-tools/openai-agents';
//
//   const pad = new Scratchpad('data').forAgent('planner');
//   const agent = new Agent({ name: 'planner', tools: tools(pad) });
//
// Each tool keeps the component's own description and JSON schema (not in strict mode: its
// optional arguments are optional). A refused call reaches the model as the tool's output,
// "error: " and the server's text; the run goes on.

import { tool } from '@openai/agents';
import { ToolError } from './index.js';

/** A function tool for every tool of `pad` (a Scratchpad, or one bound by `forAgent`). */
export function tools(pad) {
  return pad.tools().map((definition) => tool({
    name: definition.name,
    description: definition.description,
    parameters: definition.inputSchema,
    strict: false,
    execute: async (input) => {
      try {
        return JSON.stringify(await pad.call(definition.name, input));
      } catch (e) {
        if (e instanceof ToolError) return `error: ${e.message}`;
        throw e;
      }
    },
  }));
}
