import v8 from 'node:v8';
import { syncBuiltinESMExports } from 'node:module';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ConfigError, loadConfig, loadConfigOrExit } from '../../platform/config.ts';

/** The error `loadConfig` throws for `env` (undefined when it accepts it). */
function refusal(env: Record<string, string>): ConfigError | undefined {
  try {
    loadConfig(env);
    return undefined;
  } catch (err) {
    return err as ConfigError;
  }
}

describe('configuration from the environment', () => {
  it('has working defaults for every setting', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({ PORT: 3000, TEMPORAL_UI_PORT: 8233, TEMPORAL_NAMESPACE: 'default', RATE_LIMIT_PER_MINUTE: 100, RATE_LIMIT_PER_MINUTE_PREMIUM: 5000, RATE_LIMIT_PER_DAY: 10000, RATE_LIMIT_CONCURRENCY: 10, WEBHOOK_ALLOW_PRIVATE_NETWORKS: false, TEMPORAL_POLLERS: 'autoscaling' });
    expect(config.DATABASE_URL).toBeUndefined();
    expect(config.ADMIN_TOKEN).toBeUndefined();
  });

  it('names every bad variable at once, one line each', () => {
    const error = refusal({ PORT: 'eighty', DATABASE_URL: 'mysql://x', TEMPORAL_ADDRESS: 'localhost', ADMIN_TOKEN: 'short', WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'maybe', TEMPORAL_POLLERS: 'many' });
    expect(error).toBeInstanceOf(ConfigError);
    const problems = error!.problems;
    expect(problems.map((p) => p.split('=')[0]).sort()).toEqual(['ADMIN_TOKEN', 'DATABASE_URL', 'PORT', 'TEMPORAL_ADDRESS', 'TEMPORAL_POLLERS', 'WEBHOOK_ALLOW_PRIVATE_NETWORKS']);
    expect(problems.find((p) => p.startsWith('TEMPORAL_ADDRESS'))).toContain('host:port');
    expect(problems.find((p) => p.startsWith('TEMPORAL_POLLERS'))).toContain('autoscaling');
    expect(error!.message.split('\n')).toHaveLength(7);
  });

  it('keeps live payments off the sandbox unless PAYMENTS_LIVE_SANDBOX=true, and wants a long CARD_FINGERPRINT_KEY', () => {
    const defaults = loadConfig({});
    expect(defaults.PAYMENTS_LIVE_SANDBOX).toBe(false);
    expect(defaults.CARD_FINGERPRINT_KEY).toBeUndefined();
    const error = refusal({ PAYMENTS_LIVE_GATEWAY: 'sandbox', CARD_FINGERPRINT_KEY: 'short' });
    expect(error).toBeInstanceOf(ConfigError);
    expect(error!.problems.map((p) => p.split('=')[0]).sort()).toEqual(['CARD_FINGERPRINT_KEY', 'PAYMENTS_LIVE_GATEWAY']);
    expect(error!.problems.join('\n')).toContain('PAYMENTS_LIVE_SANDBOX=true');
    expect(loadConfig({ PAYMENTS_LIVE_GATEWAY: 'sandbox', PAYMENTS_LIVE_SANDBOX: 'true' })).toMatchObject({ PAYMENTS_LIVE_GATEWAY: 'sandbox', PAYMENTS_LIVE_SANDBOX: true });
  });

  describe('V8_HEAP_GROWING_PERCENT', () => {
    afterEach(() => {
      vi.restoreAllMocks();
      syncBuiltinESMExports();
    });
    /** The V8 flags an entry point's `loadConfigOrExit` sets, read from `node:v8` as the config module imports it. */
    const flagsSetBy = (env: Record<string, string>) => {
      vi.restoreAllMocks(); // a fresh spy for each call
      const set = vi.spyOn(v8, 'setFlagsFromString').mockImplementation(() => undefined);
      syncBuiltinESMExports();
      loadConfigOrExit(env);
      return set.mock.calls.map(([flag]) => flag);
    };

    it('bounds the heaps\' growth for the whole process when an entry point loads its config: 50 % by default, 0 leaves it to V8', () => {
      expect(flagsSetBy({})).toEqual(['--heap-growing-percent=50']);
      expect(flagsSetBy({ V8_HEAP_GROWING_PERCENT: '25' })).toEqual(['--heap-growing-percent=25']);
      expect(flagsSetBy({ V8_HEAP_GROWING_PERCENT: '0' })).toEqual([]);
    });

    it('refuses what is not a percentage from 0 to 300', () => {
      for (const bad of ['-5', '301', '1e9', 'half', '12.5']) {
        expect(refusal({ V8_HEAP_GROWING_PERCENT: bad })?.problems.map((p) => p.split('=')[0])).toEqual(['V8_HEAP_GROWING_PERCENT']);
      }
    });
  });

  it('releases memory after 30 s of quiet by default (MEMORY_RELEASE_IDLE_MS; 0: never) and refuses what is not milliseconds', () => {
    expect(loadConfig({}).MEMORY_RELEASE_IDLE_MS).toBe(30_000);
    expect(loadConfig({ MEMORY_RELEASE_IDLE_MS: '0' }).MEMORY_RELEASE_IDLE_MS).toBe(0);
    for (const bad of ['-1', 'soon', '1.5', '1e12']) {
      expect(refusal({ MEMORY_RELEASE_IDLE_MS: bad })?.problems.map((p) => p.split('=')[0])).toEqual(['MEMORY_RELEASE_IDLE_MS']);
    }
  });

  it("trims glibc's malloc every 5 s by default (MALLOC_TRIM_INTERVAL_MS; 0: only after a release) and refuses what is not milliseconds", () => {
    expect(loadConfig({}).MALLOC_TRIM_INTERVAL_MS).toBe(5_000);
    expect(loadConfig({ MALLOC_TRIM_INTERVAL_MS: '0' }).MALLOC_TRIM_INTERVAL_MS).toBe(0);
    for (const bad of ['-1', 'often', '0.5', '1e12']) {
      expect(refusal({ MALLOC_TRIM_INTERVAL_MS: bad })?.problems.map((p) => p.split('=')[0])).toEqual(['MALLOC_TRIM_INTERVAL_MS']);
    }
  });

  it('treats empty variables as unset', () => {
    expect(loadConfig({ PORT: '', ADMIN_TOKEN: '' }).PORT).toBe(3000);
  });
});
