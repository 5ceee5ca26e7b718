/** A tool definition exactly as the scratchpad-mcp server's `tools/list` gives it. */
export interface ToolDefinition {
  name: string;
  description: string;
  inputSchema: { type: 'object'; properties?: Record<string, unknown>; required?: string[]; [key: string]: unknown };
  annotations?: Record<string, unknown>;
}

/** The server's `[limits]`, by their config-file names; each left out keeps its default. */
export interface Limits {
  max_files?: number | bigint;
  max_log_entries?: number | bigint;
  max_total_bytes?: number | bigint;
  max_write_bytes?: number | bigint;
  max_log_entry_bytes?: number | bigint;
  versions_kept?: number;
  log_page_size?: number;
  max_response_tokens?: number | bigint;
}

/** Your own model client: the summary's text for a system prompt and a user prompt. */
export type Summariser = (system: string, prompt: string, maxTokens: number) => string | Promise<string>;

export interface ScratchpadOptions {
  summariser?: Summariser | null;
  /** The model's name: summaries are cached per model. */
  summaryModel?: string;
  limits?: Limits;
  /** How long one call may run before it is stopped (the summariser's wait excluded). */
  timeoutMs?: number;
}

/** What the adapters take: a Scratchpad, or one bound to an agent. */
export interface Pad {
  tools(): ToolDefinition[];
  call(tool: string, args?: Record<string, unknown>): Promise<Record<string, unknown>>;
}

export const CALL_TIMEOUT_MS: number;
export const LIMIT_NAMES: readonly string[];

/** A call the tools refused; nothing was changed. `kind` is the WIT error case, or `trap`. */
export class ToolError extends Error {
  constructor(kind: string, message: string);
  readonly kind: string;
}

export class SummariserError extends Error {
  static readonly KINDS: readonly ['not-configured', 'unauthorized', 'unavailable', 'failed'];
  constructor(kind: 'not-configured' | 'unauthorized' | 'unavailable' | 'failed', message: string);
  readonly kind: string;
}

export class Scratchpad implements Pad {
  constructor(folder: string, options?: ScratchpadOptions);
  readonly folder: string;
  tools(): ToolDefinition[];
  call(tool: string, args?: Record<string, unknown>): Promise<Record<string, unknown>>;
  forAgent(agentId: string): AgentScratchpad;
  export(iface: string, fn: string, ...args: unknown[]): Promise<unknown>;
  close(): Promise<void>;
}

export class AgentScratchpad implements Pad {
  constructor(pad: Scratchpad, agentId: string);
  readonly pad: Scratchpad;
  readonly agentId: string;
  tools(): ToolDefinition[];
  call(tool: string, args?: Record<string, unknown>): Promise<Record<string, unknown>>;
}
