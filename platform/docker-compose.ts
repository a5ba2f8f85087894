/**
 * Docker Compose, for checking docker-compose.yml without a Docker engine (`docker compose config`
 * is client-only: it resolves the file, its profiles and its variables, and validates them against
 * the Compose specification). The command comes from DOCKER_COMPOSE_BIN, a working `docker compose`
 * plugin, `docker-compose` on PATH or cached in `.tools/bin`, or is built once with Go from the
 * module proxy (a few minutes on a fresh machine).
 */
import { execFile } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { PROJECT_ROOT, TOOLS_BIN, findGo, findOnPath, isExecutable } from './executables.ts';

const run = promisify(execFile);

export const COMPOSE_MODULE = 'github.com/docker/compose/v2';
export const COMPOSE_VERSION = 'v2.40.3';

/** How to run Compose: `command ...args <compose arguments>`. */
export interface ComposeCommand {
  command: string;
  args: string[];
  source: 'env' | 'docker-plugin' | 'path' | 'cache' | 'built';
}

async function answers(command: string, args: string[]): Promise<boolean> {
  try {
    await run(command, [...args, 'version'], { timeout: 15_000 });
    return true;
  } catch {
    return false;
  }
}

/**
 * Compose's module carries `exclude` directives, which `go install module@version` refuses; as a
 * dependency of a module of our own (in `.tools/go/docker-compose`) it builds like any package.
 */
async function buildWithGo(log: (line: string) => void): Promise<string> {
  const go = findGo();
  if (!go) throw new Error('Docker Compose is not installed and Go is not there to build it: install Docker Compose or Go, or set DOCKER_COMPOSE_BIN.');
  const dir = join(PROJECT_ROOT, '.tools', 'go', 'docker-compose');
  await mkdir(dir, { recursive: true });
  await mkdir(TOOLS_BIN, { recursive: true });
  await writeFile(join(dir, 'go.mod'), 'module bp.local/docker-compose\n\ngo 1.24\n');
  const binary = join(TOOLS_BIN, 'docker-compose');
  const opts = { cwd: dir, env: { ...process.env, CGO_ENABLED: '0' }, maxBuffer: 32 * 1024 * 1024 };
  log(`building ${COMPOSE_MODULE}@${COMPOSE_VERSION} into ${TOOLS_BIN} (once; a few minutes on a fresh machine) …`);
  const started = Date.now();
  try {
    await run(go, ['get', `${COMPOSE_MODULE}/cmd@${COMPOSE_VERSION}`], opts);
    await run(go, ['build', '-trimpath', '-ldflags', `-s -w -X ${COMPOSE_MODULE}/internal.Version=${COMPOSE_VERSION}`, '-o', binary, `${COMPOSE_MODULE}/cmd`], opts);
  } catch (err) {
    const e = err as Error & { stderr?: string };
    throw new Error(`Docker Compose could not be built with Go: ${(e.stderr || e.message).trim().split('\n').slice(-8).join('\n')}`, { cause: err });
  }
  log(`built Docker Compose in ${Math.round((Date.now() - started) / 1000)} s`);
  return binary;
}

/** A working Compose command, building one into `.tools/bin` when none is installed. */
export async function ensureDockerCompose(log: (line: string) => void = () => undefined): Promise<ComposeCommand> {
  const fromEnv = process.env.DOCKER_COMPOSE_BIN;
  if (fromEnv) {
    if (!isExecutable(fromEnv)) throw new Error(`DOCKER_COMPOSE_BIN=${fromEnv} is not an executable file.`);
    return { command: fromEnv, args: [], source: 'env' };
  }
  const docker = findOnPath('docker');
  if (docker && (await answers(docker, ['compose']))) return { command: docker, args: ['compose'], source: 'docker-plugin' };
  const onPath = findOnPath('docker-compose');
  if (onPath && (await answers(onPath, []))) return { command: onPath, args: [], source: 'path' };
  const cached = join(TOOLS_BIN, 'docker-compose');
  if (isExecutable(cached) && (await answers(cached, []))) return { command: cached, args: [], source: 'cache' };
  return { command: await buildWithGo(log), args: [], source: 'built' };
}

/**
 * `docker compose config` of the project's docker-compose.yml (or `file`, relative to the project)
 * as JSON: everything resolved (the anchors, the variables from `env`, the services of the given
 * profiles). Rejects with Compose's own message when the file is not valid.
 */
export async function composeConfig(
  compose: ComposeCommand, opts: { profiles?: string[]; env?: Record<string, string>; file?: string } = {},
): Promise<ComposeModel> {
  const profiles = (opts.profiles ?? []).flatMap((p) => ['--profile', p]);
  const file = resolve(PROJECT_ROOT, opts.file ?? 'docker-compose.yml');
  const args = [...compose.args, '--file', file, '--project-directory', PROJECT_ROOT, ...profiles, 'config', '--format', 'json'];
  const { stdout } = await run(compose.command, args, {
    cwd: PROJECT_ROOT,
    // Only what is given: the caller's own environment must not change what the file resolves to.
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...opts.env },
    timeout: 60_000,
    maxBuffer: 16 * 1024 * 1024,
  }).catch((err: Error & { stderr?: string }) => {
    throw new Error(`docker compose config refused ${file}: ${(err.stderr || err.message).trim()}`, { cause: err });
  });
  return JSON.parse(stdout) as ComposeModel;
}

/** The parts of Compose's resolved model the checks read. */
export interface ComposeModel {
  name: string;
  services: Record<string, {
    image?: string;
    command?: string[];
    environment?: Record<string, string | null>;
    ports?: { target: number; published?: string }[];
    expose?: string[];
    profiles?: string[];
    depends_on?: Record<string, { condition: string }>;
    volumes?: { type: string; source?: string; target: string; read_only?: boolean }[];
    configs?: { source: string; target: string }[];
    healthcheck?: { test?: string[] };
  }>;
  configs?: Record<string, { content?: string; file?: string }>;
  volumes?: Record<string, unknown>;
}
