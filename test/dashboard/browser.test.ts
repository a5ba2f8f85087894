import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestPlatform } from '../support/platform.ts';
import { usePlatform, type Http } from '../support/use-platform.ts';
import { newUser, type TestUser } from './sessions.ts';

let platform: TestPlatform;
let http: Http;
let browser: Browser;

usePlatform({}, (t) => ({ platform, http } = t));

beforeAll(async () => {
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox'] });
});
afterAll(() => browser?.close());

/** A fresh browser context (its own cookies) signed in through the form. */
async function signedIn(user: TestUser, viewport = { width: 1280, height: 900 }): Promise<Page> {
  const context = await browser.newContext({ viewport });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: platform.url });
  const page = await context.newPage();
  await page.goto(`${platform.url}/dashboard`);
  await page.getByLabel('Email').fill(user.email);
  await page.getByLabel('Password').fill(user.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'API keys', level: 1 }).waitFor();
  return page;
}

async function usageNumber(page: Page, testId: string): Promise<number> {
  return Number((await page.getByTestId(testId).textContent())!.replace(/[^\d]/g, ''));
}

describe('the dashboard in a browser', () => {
  it('refuses a wrong password on the sign-in form', async () => {
    const user = await newUser(platform, 'owner');
    const page = await (await browser.newContext()).newPage();
    await page.goto(`${platform.url}/dashboard/keys`);
    await page.getByLabel('Email').fill(user.email);
    await page.getByLabel('Password').fill('not the password at all');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expectVisible(page.getByRole('alert'));
    expect(await page.getByRole('heading', { name: 'API keys' }).count()).toBe(0);
    await page.context().close();
  });

  it('creates a key shown once, sees it used on /v3 and counted, and revokes it', async () => {
    const page = await signedIn(await newUser(platform, 'owner'));

    await page.getByRole('link', { name: 'Usage' }).click();
    await page.getByTestId('requests-today').waitFor();
    const before = await usageNumber(page, 'requests-today');
    await page.getByRole('link', { name: 'API keys' }).click();

    await page.getByRole('button', { name: 'Create key' }).click();
    await page.getByLabel('Name').fill('Browser key');
    await page.getByRole('button', { name: 'Create key' }).click();
    const secret = (await page.getByTestId('new-secret').textContent())!;
    expect(secret).toMatch(/^bp_test_[0-9A-Za-z]{40}$/);
    await page.getByRole('button', { name: 'Copy' }).click();
    await page.getByText('Copied to the clipboard.').waitFor();
    expect(await page.evaluate('navigator.clipboard.readText()')).toBe(secret);

    await page.getByRole('button', { name: 'I have saved it' }).click();
    const row = page.getByRole('row').filter({ hasText: 'Browser key' });
    await waitForText(row.getByTestId('last-used'), 'Never');
    expect(await row.textContent()).toContain('Active');
    // Once closed, the secret is nowhere on the page, nor after a reload.
    expect(await page.content()).not.toContain(secret);
    expect(await row.textContent()).toContain(`${secret.slice(0, 8)}…${secret.slice(-4)}`);

    expect((await http('/v3/customers', { key: secret })).status).toBe(200);
    expect((await http('/v3/customers/cus_missing', { key: secret })).status).toBe(404);
    await platform.api.deps.requestLog.flush();

    await page.reload();
    await page.getByRole('heading', { name: 'API keys', level: 1 }).waitFor();
    const used = page.getByRole('row').filter({ hasText: 'Browser key' }).getByTestId('last-used');
    await used.waitFor();
    expect(await used.textContent()).not.toBe('Never');
    expect(await page.content()).not.toContain(secret);

    await page.getByRole('link', { name: 'Usage' }).click();
    await page.getByTestId('requests-today').waitFor();
    expect(await usageNumber(page, 'requests-today')).toBe(before + 2);
    expect(await usageNumber(page, 'requests-per-minute')).toBeGreaterThanOrEqual(2);
    expect(await page.getByTestId('success-rate').textContent()).toMatch(/%$/);
    expect(await page.locator('svg[role="img"] rect.bar').count()).toBe(30);

    await page.getByRole('link', { name: 'Request log' }).click();
    await page.getByLabel('Status').selectOption('4xx');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.getByRole('button', { name: /Show problem/ }).click();
    expect(await page.locator('pre.problem').textContent()).toContain('"code": "not_found"');

    await page.getByRole('link', { name: 'API keys' }).click();
    page.once('dialog', (dialog) => void dialog.accept());
    await page.getByRole('button', { name: 'Revoke Browser key' }).click();
    await waitForText(page.getByRole('row').filter({ hasText: 'Browser key' }).locator('.badge'), 'Revoked');
    const refused = await http('/v3/customers', { key: secret });
    expect(refused.status).toBe(401);
    expect(refused.body.code).toBe('api_key_revoked');

    // The test/live toggle: live mode lists live keys only, and drops the test-mode banner.
    await page.getByRole('switch', { name: 'Live mode' }).click();
    await page.getByText('No live keys yet.').waitFor();
    expect(await page.getByRole('note').count()).toBe(0);
    expect(await page.getByRole('switch', { name: 'Live mode' }).getAttribute('aria-checked')).toBe('true');
    await page.context().close();
  });

  it('shows a viewer no way to create a key, and the API refuses it anyway, at phone width too', async () => {
    const page = await signedIn(await newUser(platform, 'viewer'), { width: 375, height: 740 });
    await page.getByText('can see keys but not create').waitFor();
    expect(await page.getByRole('button', { name: 'Create key' }).count()).toBe(0);
    expect(await page.getByRole('button', { name: /^Revoke/ }).count()).toBe(0);
    // The page fits a phone: nothing wider than the screen but the tables' own scrolling regions.
    expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(375);
    await page.getByRole('link', { name: 'Team' }).click();
    await page.getByRole('heading', { name: 'Team', level: 1 }).waitFor();

    // The same browser session calling the API directly, with its CSRF token.
    const session = await page.request.get(`${platform.url}/dashboard/session`, { headers: { accept: 'application/json' } });
    const { csrf_token: csrf } = (await session.json()) as { csrf_token: string };
    const res = await page.request.post(`${platform.url}/dashboard/trpc/keys.create`, {
      headers: { 'x-csrf-token': csrf, 'content-type': 'application/json' }, data: { name: 'sneaky', mode: 'test' },
    });
    expect(res.status()).toBe(403);
    await page.context().close();
  });

  it('moves between pages with the keyboard, focus following to each page and always visible', async () => {
    const page = await signedIn(await newUser(platform, 'developer'));
    const focused = () => page.evaluate('document.activeElement?.textContent');
    // The page's heading takes the focus once the page has rendered (an effect): wait for the
    // heading itself, not only its text (the nav link pressed has the same text).
    // Polled from the test: page.waitForFunction polls inside the page with eval once its first check
    // fails, which the dashboard's Content-Security-Policy (no 'unsafe-eval') refuses.
    const headingFocused = async (title: string) => {
      await expect.poll(() => page.evaluate('document.activeElement?.id'), { timeout: 5_000 }).toBe('page-title');
      expect(await focused()).toBe(title);
    };
    // A new page puts the focus on its heading; Tab goes on to the page's first control.
    await headingFocused('API keys');
    await page.keyboard.press('Tab');
    expect(await focused()).toBe('Create key');
    expect(await page.getByRole('link', { name: 'Skip to content' }).getAttribute('href')).toBe('#main');

    await page.getByRole('link', { name: 'Events' }).focus();
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Events', level: 1 }).waitFor();
    expect(new URL(page.url()).pathname).toBe('/dashboard/events');
    await headingFocused('Events');
    expect(await page.getByRole('link', { name: 'Events' }).getAttribute('aria-current')).toBe('page');
    await page.keyboard.press('Tab');
    const outline = await page.evaluate('getComputedStyle(document.activeElement).outlineStyle');
    expect(outline).toBe('solid');
    await page.context().close();
  });
});

async function expectVisible(locator: ReturnType<Page['locator']>): Promise<void> {
  await locator.waitFor({ state: 'visible' });
}

/** Waits until the locator's text is `text` (the app reloads lists after a change). */
async function waitForText(locator: ReturnType<Page['locator']>, text: string): Promise<void> {
  await locator.filter({ hasText: new RegExp(`^${text}$`) }).waitFor();
}
