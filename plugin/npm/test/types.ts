// Type-checked, never run (`npm run typecheck`): the README's usage, as a TypeScript user
// writes it, holds against the package's declarations and the frameworks' own types.
import { generateText, stepCountIs, type LanguageModel } from 'ai';
import { Agent } from '@openai/agents';
import { Scratchpad, SummariserError, ToolError, type ToolDefinition } from 'scratchpad-tools';
import { tools } from 'scratchpad-tools/ai-sdk';
import { tools as agentTools } from 'scratchpad-tools/openai-agents';

export async function usage(model: LanguageModel): Promise<void> {
  const pad = new Scratchpad('data', {
    summaryModel: 'claude-haiku-4-5',
    summariser: async (system: string, prompt: string, maxTokens: number) => `${system}${prompt}${maxTokens}`,
    limits: { versions_kept: 3 },
    timeoutMs: 5_000,
  });
  const planner = pad.forAgent('planner');
  const listed: ToolDefinition[] = planner.tools();
  const written: Record<string, unknown> = await planner.call('write_file', { path: 'plan.md', content: listed[0].name });
  await generateText({ model, tools: tools(planner), stopWhen: stepCountIs(5), prompt: String(written.version) });
  new Agent({ name: 'planner', tools: agentTools(planner) });
  try {
    await pad.call('read_file', { agent_id: 'a', path: 'missing.md' });
  } catch (e) {
    if (e instanceof ToolError) console.log(e.kind, e.message);
  }
  void new SummariserError('unavailable', 'overloaded');
  await pad.close();
}
