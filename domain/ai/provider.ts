import type * as OpenAi from '@ai-sdk/openai';
import type * as OpenAiCompatible from '@ai-sdk/openai-compatible';
import type { LanguageModel } from 'ai';
import { createRequire } from 'node:module';
import type { Config } from '../../platform/config.ts';
import { ApiError } from '../../platform/errors.ts';

/**
 * The language model /v3/ai calls, chosen by configuration (AI_PROVIDER, AI_MODEL, the key from
 * AI_API_KEY or OPENAI_API_KEY, AI_BASE_URL for an OpenAI-compatible server such as a local model
 * server). Null when no provider is configured: every /v3/ai route then answers 503
 * `ai_not_configured`. Tests replace it through the area's services (a scripted mock model).
 */
export interface AiModel {
  model: LanguageModel;
  /** The model's name as recorded with each call (never the key). */
  name: string;
}

export function createAiModel(config: Config): AiModel | null {
  if (!config.AI_PROVIDER || !config.AI_MODEL) return null;
  const apiKey = config.AI_API_KEY ?? config.OPENAI_API_KEY;
  // The provider SDKs load only when a model is configured (a server without one never holds them).
  const require = createRequire(import.meta.url);
  if (config.AI_PROVIDER === 'openai') {
    const { createOpenAI } = require('@ai-sdk/openai') as typeof OpenAi;
    const openai = createOpenAI({ apiKey, ...(config.AI_BASE_URL ? { baseURL: config.AI_BASE_URL } : {}) });
    return { model: openai(config.AI_MODEL), name: `openai/${config.AI_MODEL}` };
  }
  const { createOpenAICompatible } = require('@ai-sdk/openai-compatible') as typeof OpenAiCompatible;
  const compatible = createOpenAICompatible({
    name: 'openai-compatible', baseURL: config.AI_BASE_URL!, ...(apiKey ? { apiKey } : {}), supportsStructuredOutputs: true,
  });
  return { model: compatible.chatModel(config.AI_MODEL), name: `openai-compatible/${config.AI_MODEL}` };
}

/** 503 `ai_not_configured`: a configuration problem, so no Retry-After (retrying does not help until it is set). */
export function aiNotConfigured(): ApiError {
  return new ApiError({
    status: 503, code: 'ai_not_configured', title: 'Service Unavailable',
    detail: 'No language-model provider is configured on this server.',
    suggestion: 'Set AI_PROVIDER (openai or openai-compatible), AI_MODEL and AI_API_KEY (or OPENAI_API_KEY); for a local or other OpenAI-compatible server also AI_BASE_URL. See docs/ai.md.',
    extensions: { variables: ['AI_PROVIDER', 'AI_MODEL', 'AI_API_KEY', 'OPENAI_API_KEY', 'AI_BASE_URL'] },
  });
}

/** The model, or 503 `ai_not_configured`. */
export function requireModel(model: AiModel | null | undefined): AiModel {
  if (!model) throw aiNotConfigured();
  return model;
}
