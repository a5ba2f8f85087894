/**
 * stripe-mock (https://github.com/stripe/stripe-mock): Stripe's own mock of its API, validating
 * every request against Stripe's OpenAPI spec. The Stripe adapter's tests run against it. The
 * binary comes from STRIPE_MOCK_BIN, PATH, or a cached build in `.tools/bin` (built once with Go).
 */
import { execFile, spawn } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { TOOLS_BIN, findGo, findOnPath, isExecutable } from './executables.ts';

export const STRIPE_MOCK_MODULE = 'github.com/stripe/stripe-mock@v0.197.0';

/** The stripe-mock binary, building it into `.tools/bin` with `go install` when there is none. */
export async function ensureStripeMock(log: (line: string) => void = () => undefined): Promise<string> {
  const fromEnv = process.env.STRIPE_MOCK_BIN;
  const found = fromEnv && isExecutable(fromEnv) ? fromEnv : findOnPath('stripe-mock', [TOOLS_BIN]);
  if (found) return found;
  log(`building ${STRIPE_MOCK_MODULE} into ${TOOLS_BIN} (once) …`);
  try {
    const go = findGo() ?? 'go';
    await promisify(execFile)(go, ['install', STRIPE_MOCK_MODULE], {
      env: { ...process.env, GOBIN: TOOLS_BIN, CGO_ENABLED: '0' }, maxBuffer: 16 * 1024 * 1024,
    });
  } catch (err) {
    throw new Error(`stripe-mock is not installed and could not be built with Go (${(err as Error).message}); install Go or set STRIPE_MOCK_BIN.`, { cause: err });
  }
  return join(TOOLS_BIN, 'stripe-mock');
}

export interface RunningStripeMock {
  /** e.g. http://127.0.0.1:41234 — use as STRIPE_API_BASE. */
  url: string;
  stop(): Promise<void>;
}

/** Starts stripe-mock on free loopback ports (HTTP and HTTPS), resolving once it listens. */
export async function startStripeMock(): Promise<RunningStripeMock> {
  const binary = await ensureStripeMock();
  const child = spawn(binary, ['-http-addr', '127.0.0.1:0', '-https-addr', '127.0.0.1:0'], { stdio: ['ignore', 'pipe', 'pipe'] });
  const url = await new Promise<string>((ok, fail) => {
    let output = '';
    const timer = setTimeout(() => fail(new Error(`stripe-mock did not start in 30 s:\n${output}`)), 30_000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const m = /Listening for HTTP at address: (\S+)/.exec(output);
      if (m) {
        clearTimeout(timer);
        ok(`http://${m[1]}`);
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      fail(new Error(`stripe-mock exited with ${code}:\n${output}`));
    });
  });
  child.stdout.resume();
  child.stderr.resume();
  return {
    url,
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    },
  };
}
