import { existsSync, readdirSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Where the web app's sources and built files are. From the sources (`node bin/start.ts`, tests) the
 * repository root is two levels up; from the compiled output (dist/domain/dashboard) it is three,
 * with dist/ in between.
 */
const here = fileURLToPath(new URL('../../', import.meta.url));
const ROOT = basename(here.replace(/\/$/, '')) === 'dist' ? join(here, '..') : here;

export const DASHBOARD_SOURCE_DIR = join(ROOT, 'dashboard');
export const DASHBOARD_BUILD_DIR = join(ROOT, 'dist', 'dashboard');

export function dashboardBuilt(): boolean {
  return existsSync(join(DASHBOARD_BUILD_DIR, 'index.html'));
}

/** True when a source file changed after the last build (tests rebuild then; `npm start` builds only when missing). */
export function dashboardStale(): boolean {
  if (!dashboardBuilt()) return true;
  const built = statSync(join(DASHBOARD_BUILD_DIR, 'index.html')).mtimeMs;
  const newest = (dir: string): number => readdirSync(dir, { withFileTypes: true }).reduce((max, entry) => {
    const path = join(dir, entry.name);
    return Math.max(max, entry.isDirectory() ? newest(path) : statSync(path).mtimeMs);
  }, 0);
  return newest(DASHBOARD_SOURCE_DIR) > built;
}

/** Builds the web app with Vite (a dev dependency: present wherever the sources are). */
export async function buildDashboard(): Promise<void> {
  const { build } = await import('vite');
  // A production bundle also from the test runner (which sets NODE_ENV=test for its whole process).
  const nodeEnv = process.env.NODE_ENV;
  process.env.NODE_ENV = 'production';
  try {
    await build({ configFile: join(DASHBOARD_SOURCE_DIR, 'vite.config.ts'), mode: 'production', logLevel: 'warn' });
  } finally {
    if (nodeEnv === undefined) delete process.env.NODE_ENV;
    else process.env.NODE_ENV = nodeEnv;
  }
}
