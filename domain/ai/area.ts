import { aiRoutes } from '../../api/v3/ai/routes.ts';
import { Migration0105AiCalls } from '../../db/migrations/0105-ai-calls.ts';
import { defineArea } from '../../platform/area.ts';
import { createAiModel, type AiModel } from './provider.ts';

declare module '../../platform/services.ts' {
  interface AreaServices {
    /** The language model /v3/ai calls (AI_PROVIDER, AI_MODEL …); null when none is configured. Tests replace it. */
    aiModel: AiModel | null;
  }
}

/**
 * /v3/ai: questions answered by a language model through read-only tools over the other areas'
 * services, customer summaries and support reply drafts, metered per key. See docs/ai.md.
 */
export const aiArea = defineArea({
  name: 'ai',
  permissions: ['ai'],
  routes: aiRoutes,
  migrations: [{ name: '0105-ai-calls', class: Migration0105AiCalls }],
  services: ({ config, logger }) => {
    const aiModel = createAiModel(config);
    if (aiModel) logger.info('ai provider configured', { model: aiModel.name });
    return { aiModel };
  },
});
