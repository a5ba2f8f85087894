import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ERROR_CODES } from '../../api/http/error-codes.ts';
import { REFUSALS } from '../../workflows/kit/failures.ts';
import type { TestPlatform } from '../support/platform.ts';
import { usePlatform, type Http } from '../support/use-platform.ts';

let platform: TestPlatform;
let http: Http;

usePlatform({}, (t) => ({ platform, http } = t));

const ROOT = join(import.meta.dirname, '../..');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sourceFiles(path) : name.endsWith('.ts') ? [path] : [];
  });
}

/** The codes the server constructs problems with: ApiError literals, the conflict/unauthorized helpers, refusals. */
function emittedCodes(): Set<string> {
  const codes = new Set<string>();
  for (const dir of ['api', 'domain', 'platform', 'workflows', 'activities']) {
    for (const file of sourceFiles(join(ROOT, dir))) {
      const text = readFileSync(file, 'utf8');
      for (const m of text.matchAll(/code: '([a-z_]+)',\s*title/g)) codes.add(m[1]!);
      for (const m of text.matchAll(/\b(?:conflict|unauthorized)\(\s*'([a-z_]+)'/g)) codes.add(m[1]!);
    }
  }
  for (const type of Object.values(REFUSALS)) if (/^[a-z_]+$/.test(type)) codes.add(type);
  return codes;
}

describe('error code pages', () => {
  it('every code the server can emit has a page', () => {
    const codes = emittedCodes();
    expect(codes.size).toBeGreaterThan(30);
    expect([...codes].filter((c) => !(c in ERROR_CODES))).toEqual([]);
  });

  it('a problem\'s type is an absolute URL on this server that resolves to its page', async () => {
    const problem = await http('/v3/customers');
    expect(problem.status).toBe(401);
    expect(problem.body.type).toBe(`${platform.url}/docs/errors/${problem.body.code}`);
    const page = await fetch(problem.body.type, { headers: { accept: 'text/html' } });
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toContain('text/html');
    const html = await page.text();
    expect(html).toContain(problem.body.code);
    const escape = (t: string) => t.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
    expect(html).toContain(escape(ERROR_CODES[problem.body.code]!.meaning));
    expect(html).toContain(escape(ERROR_CODES[problem.body.code]!.suggestion));
  });

  it('answers JSON on request, for every code', async () => {
    for (const [code, entry] of Object.entries(ERROR_CODES)) {
      const res = await http(`/docs/errors/${code}`, { headers: { accept: 'application/json' } });
      expect(res.status, code).toBe(200);
      expect(res.body).toEqual({ code, ...entry });
    }
  });

  it('an unknown code is a 404 problem', async () => {
    const res = await http('/docs/errors/no_such_code', { headers: { accept: 'application/json' } });
    expect(res.status).toBe(404);
    expect(res.body).toMatchObject({ code: 'not_found', status: 404 });
    expect((await http('/docs/errors/toString', { headers: { accept: 'application/json' } })).status).toBe(404);
  });
});
