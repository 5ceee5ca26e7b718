import type { FunctionTool } from '@openai/agents';
import type { Pad } from './index.js';

/** An OpenAI Agents SDK function tool for every tool of `pad`. */
export function tools(pad: Pad): FunctionTool[];
