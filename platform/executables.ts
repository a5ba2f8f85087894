/** Finding the command-line tools the local platform runs (Temporal CLI, stripe-mock, Go). */
import { accessSync, constants } from 'node:fs';
import { delimiter, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const PROJECT_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
/** Where tools built on first use are cached (git-ignored). */
export const TOOLS_BIN = join(PROJECT_ROOT, '.tools', 'bin');

export function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The first executable `name` in PATH, then in `extraDirs`. */
export function findOnPath(name: string, extraDirs: string[] = []): string | null {
  const dirs = [...(process.env.PATH ?? '').split(delimiter), ...extraDirs].filter(Boolean);
  for (const dir of dirs) {
    const candidate = join(dir, name);
    if (isExecutable(candidate)) return candidate;
  }
  return null;
}

/** The Go command that builds the tools on first use: on PATH, or where the official tarball installs it (often not on PATH). */
export function findGo(): string | null {
  return findOnPath('go', ['/usr/local/go/bin']);
}
