import { autocannonRun, type Scenario } from './harness.ts';

const CLIENTS = 10;
const DURATION_S = 10;

/**
 * POST /v3/shipping/rates/compare asks the three sandbox carriers in parallel (their simulated
 * latencies: parcelpoint 15 ms, swiftex 30 ms, cargoline 45 ms). Next to it, in the same run, the
 * same call with the slowest carrier alone: the parallel call should cost little more than its
 * slowest carrier (ratio near 1), not the sum of the three (about 2).
 */
export const scenario: Scenario = {
  name: 'shipping: POST /v3/shipping/rates/compare (three carriers in parallel) vs the slowest carrier alone',
  async run(platform) {
    const key = await platform.newKey();
    const body = (carriers: string[]) => JSON.stringify({
      origin: { country: 'US', postal_code: '07102' }, destination: { country: 'US', postal_code: '62701' },
      packages: [{ weight: 2, dimensions: { length: 30, width: 20, height: 15 } }], carriers,
    });
    const request = (carriers: string[]) => ({
      url: `${platform.url}/v3/shipping/rates/compare`, method: 'POST' as const, body: body(carriers), connections: CLIENTS,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    });
    const all = ['parcelpoint', 'swiftex', 'cargoline'];
    await autocannonRun({ ...request(all), duration: 2 }); // warm-up
    const compare = await autocannonRun({ ...request(all), duration: DURATION_S });
    const slowest = await autocannonRun({ ...request(['cargoline']), duration: DURATION_S });
    return {
      clients: CLIENTS,
      compare_per_sec: compare.requestsPerSec,
      compare_p50_ms: compare.p50,
      compare_p99_ms: compare.p99,
      compare_non2xx: compare.non2xx + compare.errors,
      slowest_alone_per_sec: slowest.requestsPerSec,
      slowest_alone_p50_ms: slowest.p50,
      slowest_alone_p99_ms: slowest.p99,
      p50_ratio: Math.round((compare.p50 / Math.max(1, slowest.p50)) * 100) / 100,
      p99_ratio: Math.round((compare.p99 / Math.max(1, slowest.p99)) * 100) / 100,
    };
  },
};
