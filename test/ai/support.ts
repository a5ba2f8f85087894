import type { LanguageModelV4CallOptions, LanguageModelV4Content, LanguageModelV4StreamPart } from '@ai-sdk/provider';
import { simulateReadableStream } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { startApiServer, type RunningApi } from '../../api/server.ts';
import type { AiModel } from '../../domain/ai/provider.ts';
import type { Config } from '../../platform/config.ts';
import { createLogger } from '../../platform/logger.ts';
import { client } from '../support/http.ts';
import type { TestPlatform } from '../support/platform.ts';

/** What the scripted model sees on each call: the tools offered, the prompt so far, and its step. */
export interface Turn {
  step: number;
  tools: string[];
  /** The prompt as the provider would receive it (tool results included), as JSON text. */
  prompt: string;
  /** The structured output's JSON schema, when one was asked for. */
  jsonSchema: unknown;
}

/** A reply: tool calls to make (the SDK runs them and calls again), or the final text. */
export type Reply = { calls: { tool: string; input: unknown }[] } | { text: string };
/** A script may wait (on a gate the test opens) before it replies, e.g. to act while a stream is open. */
export type Script = (turn: Turn) => Reply | Promise<Reply>;

const TOKENS = { in: 100, out: 20 };
const usage = () => ({
  inputTokens: { total: TOKENS.in, noCache: TOKENS.in, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: TOKENS.out, text: TOKENS.out, reasoning: 0 },
});
export const TOKENS_PER_STEP = TOKENS.in + TOKENS.out;

/**
 * The AI SDK's mock model (ai/test), driven by a script the test sets: it calls tools (which
 * the SDK executes for real, against the test's database) and then answers. Every turn is kept,
 * so a test can read what the tools returned and which tools were offered.
 */
export class ScriptedModel {
  script: Script = () => ({ text: 'no script' });
  turns: Turn[] = [];
  private step = 0;

  readonly model = new MockLanguageModelV4({
    provider: 'scripted', modelId: 'scripted-1',
    doGenerate: async (opts) => ({ content: await this.reply(opts), finishReason: this.finish(), usage: usage(), warnings: [] }),
    doStream: async (opts) => {
      const content = await this.reply(opts);
      const chunks: LanguageModelV4StreamPart[] = [];
      for (const part of content) {
        if (part.type === 'tool-call') chunks.push(part);
        else if (part.type === 'text') {
          chunks.push({ type: 'text-start', id: 't' });
          // Two deltas, so the test sees the answer arrive in pieces.
          const half = Math.ceil(part.text.length / 2);
          chunks.push({ type: 'text-delta', id: 't', delta: part.text.slice(0, half) }, { type: 'text-delta', id: 't', delta: part.text.slice(half) });
          chunks.push({ type: 'text-end', id: 't' });
        }
      }
      chunks.push({ type: 'finish', finishReason: this.finish(), usage: usage() });
      return { stream: simulateReadableStream({ chunks }) };
    },
  });

  private lastHadCalls = false;

  private async reply(opts: LanguageModelV4CallOptions): Promise<LanguageModelV4Content[]> {
    const turn: Turn = {
      step: this.step++,
      tools: (opts.tools ?? []).map((t) => t.name),
      prompt: JSON.stringify(opts.prompt),
      jsonSchema: opts.responseFormat?.type === 'json' ? opts.responseFormat.schema : undefined,
    };
    this.turns.push(turn);
    const r = await this.script(turn);
    this.lastHadCalls = 'calls' in r;
    if ('calls' in r) {
      return r.calls.map((c, i) => ({ type: 'tool-call', toolCallId: `call_${turn.step}_${i}`, toolName: c.tool, input: JSON.stringify(c.input) }));
    }
    return [{ type: 'text', text: r.text }];
  }

  private finish() {
    return { unified: this.lastHadCalls ? 'tool-calls' as const : 'stop' as const, raw: undefined };
  }

  /** A fresh script for the next request. */
  set(script: Script): void {
    this.script = script;
    this.turns = [];
    this.step = 0;
  }

  get aiModel(): AiModel {
    return { model: this.model, name: 'scripted/scripted-1' };
  }
}

/**
 * A second API (its log lines kept for `logs()`) on the test platform's database and Temporal, with the scripted model as its
 * `aiModel` service (the area's provider replaced, as any test replaces an area's service) and
 * its own settings (a small token budget).
 */
export async function startAiApi(
  platform: TestPlatform, model: ScriptedModel | AiModel | null, config: Partial<Config> = {},
): Promise<RunningApi & { http: ReturnType<typeof client>; logs(): string }> {
  const lines: string[] = [];
  const sink = { write: (line: string) => lines.push(line) };
  const api = await startApiServer({
    config: { ...platform.config, ...config }, orm: platform.orm, temporal: platform.temporal, logger: createLogger('info', {}, { out: sink, err: sink }),
    port: 0, host: '127.0.0.1',
    services: { paymentGateways: platform.paymentGateways, aiModel: model instanceof ScriptedModel ? model.aiModel : model },
    rateLimitClock: platform.rateLimitClock,
  });
  return { ...api, http: client(api.url), logs: () => lines.join('') };
}

/** Parses a server-sent events body into its events (name and JSON data). */
export function parseSse(text: string): { event: string; data: any }[] {
  return text.split('\n\n').filter((block) => block.trim()).map((block) => {
    const lines = block.split('\n');
    const event = lines.find((l) => l.startsWith('event: '))?.slice(7) ?? 'message';
    const data = lines.filter((l) => l.startsWith('data: ')).map((l) => l.slice(6)).join('\n');
    return { event, data: JSON.parse(data) };
  });
}
