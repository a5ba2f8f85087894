import pg from 'pg';
import { autocannonRun, percentile, type Scenario } from './harness.ts';

const CLIENTS = 10;
const DURATION_S = 10;

/** `clients` loops, each running `UPDATE … SET n = n + 1` on the same row for `seconds`: a hot row's bare figure. */
async function plainUpdates(dbUrl: string, clients: number, seconds: number) {
  const pool = new pg.Pool({ connectionString: dbUrl, max: clients });
  try {
    await pool.query('create table if not exists bench_hot_row (id int primary key, n bigint not null)');
    await pool.query('insert into bench_hot_row values (1, 0) on conflict do nothing');
    const latencies: number[] = [];
    const until = Date.now() + seconds * 1000;
    await Promise.all(Array.from({ length: clients }, async () => {
      while (Date.now() < until) {
        const t0 = performance.now();
        await pool.query('update bench_hot_row set n = n + 1 where id = 1');
        latencies.push(performance.now() - t0);
      }
    }));
    latencies.sort((a, b) => a - b);
    return { perSec: Math.round(latencies.length / seconds), p50: Math.round(percentile(latencies, 50) * 10) / 10, p99: Math.round(percentile(latencies, 99) * 10) / 10 };
  } finally {
    await pool.end();
  }
}

/**
 * Redemptions per second on one hot customer (every redemption locks the same loyalty account row,
 * spends its grants and writes the ledger, the redemption and the event in one transaction) and
 * awards per second to one customer (each through the customer's loyalty workflow: update-with-
 * start, one activity), both at 10 concurrent clients over HTTP, next to the bare figure of a
 * plain UPDATE of one row by 10 clients in the same run.
 */
export const scenario: Scenario = {
  name: 'rewards: redemptions and awards on one hot customer vs a plain UPDATE of one row',
  async run(platform) {
    const key = await platform.newKey();
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    const post = async (path: string, body: unknown) => {
      const res = await fetch(`${platform.url}${path}`, { method: 'POST', headers, body: JSON.stringify(body) });
      if (res.status !== 201) throw new Error(`${path} → ${res.status}: ${await res.text()}`);
      return (await res.json()) as { id: string };
    };
    const customer = await post('/v3/customers', { email: 'hot@example.com', name: 'Hot Customer' });
    for (let i = 0; i < 3; i++) await post('/v3/rewards/points/award', { customer_id: customer.id, points: 10_000_000, reason: `bench stock ${i}` });
    const reward = await post('/v3/rewards/catalog', { name: 'Sticker', cost: 1 });

    const redeem = {
      url: `${platform.url}/v3/rewards/redeem`, method: 'POST' as const, headers, connections: CLIENTS,
      body: JSON.stringify({ customer_id: customer.id, reward_id: reward.id, points_used: 1 }),
    };
    await autocannonRun({ ...redeem, duration: 2 }); // warm-up
    const redemptions = await autocannonRun({ ...redeem, duration: DURATION_S });

    const awards = {
      url: `${platform.url}/v3/rewards/points/award`, method: 'POST' as const, headers, connections: CLIENTS,
      body: JSON.stringify({ customer_id: customer.id, points: 10, reason: 'bench award' }),
    };
    await autocannonRun({ ...awards, duration: 2 });
    const awarded = await autocannonRun({ ...awards, duration: DURATION_S });

    await plainUpdates(platform.dbUrl, CLIENTS, 2);
    const plain = await plainUpdates(platform.dbUrl, CLIENTS, DURATION_S);
    const [ledger] = await platform.sql<{ balance: string; entries: string; redemptions: string }>(
      `select (select points_balance from loyalty_accounts where id = $1) as balance,
              (select coalesce(sum(points_change), 0) from loyalty_ledger_entries where customer_id = $1) as entries,
              (select count(*) from loyalty_redemptions where customer_id = $1) as redemptions`, [customer.id]);
    return {
      clients: CLIENTS,
      redemptions_per_sec: redemptions.requestsPerSec,
      redemptions_p50_ms: redemptions.p50,
      redemptions_p99_ms: redemptions.p99,
      redemptions_non2xx: redemptions.non2xx + redemptions.errors,
      awards_per_sec: awarded.requestsPerSec,
      awards_p50_ms: awarded.p50,
      awards_p99_ms: awarded.p99,
      awards_non2xx: awarded.non2xx + awarded.errors,
      plain_updates_per_sec: plain.perSec,
      plain_update_p50_ms: plain.p50,
      redemptions_vs_plain_update: Math.round((redemptions.requestsPerSec / plain.perSec) * 1000) / 1000,
      awards_vs_plain_update: Math.round((awarded.requestsPerSec / plain.perSec) * 1000) / 1000,
      ledger_matches_balance: Number(ledger?.balance) === Number(ledger?.entries),
      redemptions_total: Number(ledger?.redemptions ?? 0),
    };
  },
};
