import { createHash } from 'node:crypto';
import express from 'express';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AppDeps } from '../../api/http/deps.ts';
import { mountGraphiql } from '../../api/v3/graphql/graphiql.ts';
import { usePlatform, type Http } from '../support/use-platform.ts';

let url: string;
let http: Http;
let key: string;
let browser: Browser;

usePlatform({}, async (t) => {
  ({ http, key } = t);
  url = t.platform.url;
  expect((await http('/v3/customers', { key, body: { email: 'graphiql@example.com', name: 'Graphi Q' } })).status).toBe(201);
});
beforeAll(async () => {
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox'] });
});
afterAll(() => browser?.close());

describe('GraphiQL at /graphiql', () => {
  it('is a page without a key or a CDN, whose policy admits exactly its own inline script', async () => {
    const res = await fetch(`${url}/graphiql`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    const html = await res.text();
    expect(html).not.toMatch(/unpkg|jsdelivr|cdn\./i);
    expect(html).not.toContain(key);
    const scripts = [...html.matchAll(/<script>([\s\S]*?)<\/script>/g)].map(([, s]) => s!);
    expect(scripts).toHaveLength(1);
    const csp = res.headers.get('content-security-policy')!;
    expect(csp).toContain(`'sha256-${createHash('sha256').update(scripts[0]!).digest('base64')}'`);
    expect(csp).not.toContain('unsafe-eval');
    expect(csp).toContain("connect-src 'self'");
  });

  it('runs a query in a browser with the key typed into its Headers tab, under its policy', async () => {
    const page = await (await browser.newContext()).newPage();
    const problems: string[] = [];
    page.on('console', (m) => { if (m.type() === 'error') problems.push(m.text()); });
    page.on('pageerror', (e) => problems.push(e.message));
    await page.goto(`${url}/graphiql`);
    await page.locator('.graphiql-container').first().waitFor();
    // The Headers tab's editor: replace its placeholder with the test key.
    await page.getByText('Headers', { exact: true }).click();
    const headers = page.locator('.graphiql-editor-tool .graphiql-editor').last();
    await headers.click();
    await page.keyboard.press('Control+A');
    await page.keyboard.press('Delete');
    await page.keyboard.insertText(JSON.stringify({ Authorization: `Bearer ${key}` }));
    await page.getByRole('button', { name: /execute query/i }).click();
    await expect.poll(async () => page.locator('.result-window').innerText(), { timeout: 20_000 }).toContain('graphiql@example.com');
    expect(problems.filter((p) => /Content Security Policy|Refused/i.test(p))).toEqual([]);
  });

  it('is off with GRAPHQL_GRAPHIQL=false', async () => {
    const app = express();
    const router = express.Router();
    mountGraphiql(router, { config: { GRAPHQL_GRAPHIQL: false } } as unknown as AppDeps);
    app.use(router);
    const server = app.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    try {
      expect((await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/graphiql`)).status).toBe(404);
    } finally {
      server.close();
    }
  });
});
