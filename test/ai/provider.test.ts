import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAiModel } from '../../domain/ai/provider.ts';
import { loadConfig, type ConfigError } from '../../platform/config.ts';
import { create, openShop } from '../commerce/support.ts';
import { usePlatform } from '../support/use-platform.ts';
import { startAiApi } from './support.ts';

/**
 * The configured provider end to end: AI_PROVIDER=openai-compatible against a local stand-in for
 * a model server (the outside world, like Ollama or vLLM would be), speaking the OpenAI chat
 * completions protocol. It asks for a tool call, then answers; its usage numbers are what the
 * key is metered with.
 */
const t = usePlatform({ ownAccount: true });
const API_KEY = 'sk-local-test-0123456789abcdef';
let server: Server;
let baseUrl: string;
let requests: { auth: string | undefined; body: any }[] = [];
let mode: 'ok' | 'unauthorized' = 'ok';

const read = async (req: IncomingMessage) => {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return JSON.parse(Buffer.concat(chunks).toString('utf8'));
};

beforeAll(async () => {
  server = createServer(async (req, res) => {
    const body = await read(req);
    requests.push({ auth: req.headers.authorization, body });
    res.setHeader('content-type', 'application/json');
    if (mode === 'unauthorized') {
      res.statusCode = 401;
      return res.end(JSON.stringify({ error: { message: 'invalid api key', type: 'invalid_request_error' } }));
    }
    const tool = body.messages.find((m: { role: string }) => m.role === 'tool');
    const answered = tool !== undefined;
    const message = answered
      ? { role: 'assistant', content: `There are ${JSON.parse(tool.content).total_available} units of LAMP-1 available.` }
      : { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_stock', arguments: '{"sku":"LAMP-1"}' } }] };
    res.end(JSON.stringify({
      id: `chatcmpl-${requests.length}`, object: 'chat.completion', created: 1_700_000_000, model: body.model,
      choices: [{ index: 0, message, finish_reason: answered ? 'stop' : 'tool_calls' }],
      usage: { prompt_tokens: 50, completion_tokens: 7, total_tokens: 57 },
    }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

describe('AI_PROVIDER=openai-compatible (a local model server)', () => {
  it('answers through the real provider adapter, calling a tool on real stock data, metered with the server\'s token counts', async () => {
    const shop = await openShop(t.http, t.key);
    await create(t.http, t.key, `/v3/stores/${shop.storeId}/products`, { name: 'Lamp', sku: 'LAMP-1', price: 2500 });
    const put = await t.http('/v3/inventory/LAMP-1/stock', { key: t.key, method: 'PUT', body: { warehouse_id: shop.warehouseId, quantity: 37, operation: 'set' } });
    expect(put.status, put.text).toBe(200);

    const config = loadConfig({ ...envOf(t.platform.config), AI_PROVIDER: 'openai-compatible', AI_MODEL: 'local-llama', AI_BASE_URL: baseUrl, AI_API_KEY: API_KEY });
    const api = await startAiApi(t.platform, createAiModel(config), config);
    try {
      requests = [];
      const res = await api.http('/v3/ai/ask', { key: t.key, body: { question: 'How many lamps can we still sell?' } });
      expect(res.status, res.text).toBe(200);
      expect(res.body.answer).toBe('There are 37 units of LAMP-1 available.');
      expect(res.body.tools_used).toEqual(['get_stock']);
      expect(res.body.usage).toEqual({ input_tokens: 100, output_tokens: 14, total_tokens: 114 });
      expect(requests).toHaveLength(2);
      expect(requests[0]!.auth).toBe(`Bearer ${API_KEY}`);
      expect(requests[0]!.body.model).toBe('local-llama');
      expect(requests[0]!.body.tools.map((x: { function: { name: string } }) => x.function.name)).toContain('get_stock');
      const [row] = await t.platform.sql<{ model: string; input_tokens: number }>('select model, input_tokens from ai_calls where id = $1', [res.body.id]);
      expect(row).toEqual({ model: 'openai-compatible/local-llama', input_tokens: 100 });

      // The server refuses (a wrong key): 503 ai_provider_unavailable with Retry-After, and the key is not logged.
      mode = 'unauthorized';
      const refused = await api.http('/v3/ai/ask', { key: t.key, body: { question: 'Again?' } });
      expect(refused.status, refused.text).toBe(503);
      expect(refused.body.code).toBe('ai_provider_unavailable');
      expect(refused.headers.get('retry-after')).toBe('30');
      expect(api.logs()).toContain('ai provider call failed');
      expect(api.logs()).not.toContain(API_KEY);
    } finally {
      mode = 'ok';
      await api.close();
    }
  });

  it('refuses a half-configured provider at start, naming the variable', () => {
    const problems = (env: Record<string, string>) => {
      try {
        loadConfig(env);
        return [];
      } catch (err) {
        return (err as ConfigError).problems;
      }
    };
    expect(problems({ AI_PROVIDER: 'openai' }).join('\n')).toMatch(/AI_MODEL=.*required/);
    expect(problems({ AI_PROVIDER: 'openai', AI_MODEL: 'gpt-4.1-mini' }).join('\n')).toMatch(/AI_API_KEY=.*needs AI_API_KEY/);
    expect(problems({ AI_PROVIDER: 'openai-compatible', AI_MODEL: 'llama' }).join('\n')).toMatch(/AI_BASE_URL=.*base URL/);
    expect(problems({ AI_PROVIDER: 'anthropic', AI_MODEL: 'x' }).join('\n')).toMatch(/AI_PROVIDER=/);
    expect(createAiModel(loadConfig({}))).toBeNull();
    expect(createAiModel(loadConfig({ AI_PROVIDER: 'openai', AI_MODEL: 'gpt-4.1-mini', OPENAI_API_KEY: 'sk-test' }))!.name).toBe('openai/gpt-4.1-mini');
  });
});

/** The test platform's settings as environment variables again (so loadConfig can add the AI ones). */
function envOf(config: Record<string, unknown>): Record<string, string> {
  return Object.fromEntries(Object.entries(config).filter(([, v]) => v !== undefined && typeof v !== 'object').map(([k, v]) => [k, String(v)]));
}
