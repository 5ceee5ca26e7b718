import type { Tool } from 'ai';
import type { Pad } from './index.js';

/** An AI SDK tool for every tool of `pad`, keyed by tool name. */
export function tools(pad: Pad): Record<string, Tool>;
