import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DASHBOARD_BUILD_DIR } from '../../domain/dashboard/assets.ts';
import type { TestPlatform } from '../support/platform.ts';
import { usePlatform } from '../support/use-platform.ts';

let platform: TestPlatform;

usePlatform({}, (t) => ({ platform } = t));

const html = { accept: 'text/html,application/xhtml+xml' };

describe('the dashboard pages', () => {
  it('serves the app with a strict policy of its own and no inline script', async () => {
    const res = await fetch(`${platform.url}/dashboard`, { headers: html });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/html');
    expect(res.headers.get('cache-control')).toBe('no-cache');
    const csp = res.headers.get('content-security-policy')!;
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain('unsafe-inline');
    expect(csp).toContain("frame-ancestors 'none'");
    const page = await res.text();
    expect(page).toMatch(/<script type="module" crossorigin src="\/dashboard\/assets\/index-[\w-]+\.js"><\/script>/);
    expect(page).not.toMatch(/<script(?![^>]*\ssrc=)[^>]*>/);
  });

  it('answers every page of the app with index.html, so a reload or a shared link works', async () => {
    const index = await (await fetch(`${platform.url}/dashboard`, { headers: html })).text();
    for (const path of ['/dashboard/', '/dashboard/keys', '/dashboard/requests?status=4xx']) {
      const res = await fetch(platform.url + path, { headers: html });
      expect(res.status, path).toBe(200);
      expect(await res.text()).toBe(index);
    }
  });

  it('caches the hashed assets for a year and 404s a missing one', async () => {
    const script = readdirSync(join(DASHBOARD_BUILD_DIR, 'assets')).find((f) => f.endsWith('.js'))!;
    const res = await fetch(`${platform.url}/dashboard/assets/${script}`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('javascript');
    expect(res.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    const missing = await fetch(`${platform.url}/dashboard/assets/index-nope.js`);
    expect(missing.status).toBe(404);
    expect(missing.headers.get('content-type')).toContain('application/problem+json');
  });

  it('answers the tRPC API without a session with 401, never the app', async () => {
    const res = await fetch(`${platform.url}/dashboard/trpc/me`);
    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject({ error: { message: expect.stringContaining('Sign in'), data: { code: 'UNAUTHORIZED' } } });
  });
});
