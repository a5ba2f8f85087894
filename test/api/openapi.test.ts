import { Validator } from '@seriousme/openapi-schema-validator';
import { describe, expect, it } from 'vitest';
import { createApp } from '../../api/app.ts';
import type { TestPlatform } from '../support/platform.ts';
import { usePlatform, type Http } from '../support/use-platform.ts';

let platform: TestPlatform;
let http: Http;

usePlatform({}, (t) => ({ platform, http } = t));

interface Layer {
  route?: { path: string; methods: Record<string, boolean> };
  handle?: { stack?: Layer[]; table?: { routes(): { method: string; path: string }[] } };
}

/** Every (method, path) the Express app actually serves, read from its router and the /v3 route table. */
function servedRoutes(): string[] {
  const app = createApp(platform.api.deps) as unknown as { router: { stack: Layer[] } };
  const out: string[] = [];
  const walk = (stack: Layer[]) => {
    for (const layer of stack) {
      if (layer.route && typeof layer.route.path === 'string') {
        for (const method of Object.keys(layer.route.methods)) {
          if (method !== '_all') out.push(`${method} ${layer.route.path.replace(/:(\w+)/g, '{$1}')}`);
        }
      } else if (layer.handle?.stack) walk(layer.handle.stack);
      else if (layer.handle?.table) out.push(...layer.handle.table.routes().map((r) => `${r.method} ${r.path}`));
    }
  };
  walk(app.router.stack);
  return out;
}

describe('OpenAPI document', () => {
  it('is served without a key and validates as OpenAPI 3.1', async () => {
    const res = await http('/v3/openapi.json');
    expect(res.status).toBe(200);
    expect(res.body.openapi).toBe('3.1.0');
    const result = await new Validator().validate(res.body);
    expect(result.errors).toBeUndefined();
    expect(result.valid).toBe(true);
  });

  it('lists every route the app serves, and nothing it does not', async () => {
    const doc = (await http('/v3/openapi.json')).body as { paths: Record<string, Record<string, unknown>> };
    const documented = Object.entries(doc.paths).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m} ${path}`)).sort();
    const served = [...new Set(servedRoutes())].sort();
    expect(served.length).toBeGreaterThan(5);
    expect(documented).toEqual(served);
  });

  it('documents request bodies, permissions and error responses from the same schemas', async () => {
    const doc = (await http('/v3/openapi.json')).body;
    const create = doc.paths['/v3/customers'].post;
    expect(create['x-permission']).toBe('crm:write');
    const body = create.requestBody.content['application/json'].schema;
    expect(Object.keys(body.properties)).toEqual(expect.arrayContaining(['email', 'first_name', 'last_name', 'name', 'customer_type', 'company', 'segments', 'custom_fields', 'metadata']));
    expect(body.properties.customer_type.enum).toEqual(['b2b', 'b2c', 'b2g']);
    expect(Object.keys(create.responses)).toEqual(expect.arrayContaining(['201', '401', '403', '415', '422', '429']));
    const list = doc.paths['/v3/customers'].get;
    expect(list.parameters.map((p: { name: string }) => p.name)).toEqual(expect.arrayContaining(['limit', 'cursor', 'email', 'segment', 'q', 'created_gte', 'created_lte']));
  });

  it('serves a human-readable docs page from a local package (no CDN)', async () => {
    const page = await http('/docs');
    expect(page.status).toBe(200);
    expect(page.text).toContain('/docs/assets/swagger-ui-bundle.js');
    expect(page.text).not.toMatch(/https?:\/\/(?!localhost)[^"']*\.(js|css)/);
    const asset = await fetch(`${platform.url}/docs/assets/swagger-ui-bundle.js`);
    expect(asset.status).toBe(200);
    expect((await asset.text()).length).toBeGreaterThan(100_000);
  });
});
