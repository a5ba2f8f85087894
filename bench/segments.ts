import { autocannonRun, type Scenario } from './harness.ts';

const CUSTOMERS = 100_000;
const BATCH = 10_000;

/**
 * Segments: 100,000 customers (and their metric snapshots) seeded in SQL, then one segment whose
 * rules read fields, tags, metrics, the latest order and subscriptions is created through the API
 * (its first evaluation records an entered event per member) and evaluated again on demand. The
 * baseline, in the same run and database, is the plain SQL count of the account's customers.
 * Goal (issue #22): an evaluation of 100,000 customers under 5 s. Then the members list under load
 * against the customers list (autocannon, loopback).
 */
export const scenario: Scenario = {
  name: 'segments: 100,000 customers evaluated vs a plain SQL count',
  async run(platform) {
    const accountId = await platform.newAccount();
    const key = await platform.newKey({ accountId, type: 'test' });
    // In batches: the bench pool's statement timeout applies to each statement.
    for (let from = 1; from <= CUSTOMERS; from += BATCH) {
      const to = Math.min(CUSTOMERS, from + BATCH - 1);
      await platform.sql(
      `insert into customers (id, account_id, livemode, email, name, customer_type, segments, custom_fields, metadata, version, created_at, updated_at)
       select 'cus_bench' || lpad(g::text, 7, '0'), $1, false, 'c' || g || '@example.com', 'Customer ' || g,
              (array['b2b', 'b2c', 'b2g'])[1 + g % 3], case when g % 7 = 0 then array['vip'] else array[]::text[] end,
              jsonb_build_object('country', (array['DE', 'AT', 'FR', 'US', 'GB'])[1 + g % 5]), '{}', 1, now(), now()
         from generate_series($2::int, $3::int) g`, [accountId, from, to]);
      await platform.sql(
      `insert into crm_customer_metrics (account_id, livemode, customer_id, total_ltv, engagement_score, lifecycle_stage, refreshed_at)
       select $1, false, 'cus_bench' || lpad(g::text, 7, '0'), (g % 1000) * 3.5, (g % 101)::numeric,
              (array['subscriber', 'lead', 'opportunity', 'customer', 'loyal', 'churned'])[1 + g % 6], now()
         from generate_series($2::int, $3::int) g`, [accountId, from, to]);
    }
    await platform.sql('analyze customers; analyze crm_customer_metrics');

    const baselineRuns: number[] = [];
    for (let i = 0; i < 3; i++) {
      const t = performance.now();
      await platform.sql(`select count(*) from customers where account_id = $1 and livemode = false`, [accountId]);
      baselineRuns.push(performance.now() - t);
    }
    const baselineMs = Math.min(...baselineRuns);

    const call = async (path: string, body: unknown) => {
      const res = await fetch(platform.url + path, {
        method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body),
      });
      const json = await res.json() as Record<string, any>;
      if (res.status >= 300) throw new Error(`${path}: ${res.status} ${JSON.stringify(json)}`);
      return json;
    };
    const rules = {
      match: 'all',
      conditions: [
        { field: 'customer_type', operator: 'in', value: ['b2b', 'b2g'] },
        { match: 'any', conditions: [
          { field: 'country', operator: 'in', value: ['DE', 'AT'] },
          { field: 'segments', operator: 'contains', value: 'vip' },
          { field: 'total_ltv', operator: 'gte', value: 3000 },
        ] },
        { field: 'lifecycle_stage', operator: 'not_in', value: ['churned'] },
        { field: 'subscription_status', operator: 'not_in', value: ['past_due', 'unpaid'] },
        { field: 'last_order_date', operator: 'not_within_last_days', value: 7 },
      ],
    };
    const t0 = performance.now();
    const created = await call('/v3/segments', { name: 'Bench', rules });
    const firstMs = performance.now() - t0;
    if (!created.last_evaluated_at) throw new Error('the first evaluation did not finish within the wait');
    // The entered events are the dispatcher's work, not the evaluation's: keep them from competing with the runs below.
    await platform.sql(`update events set dispatched_at = now() where account_id = $1 and dispatched_at is null`, [accountId]);
    const [members] = await platform.sql<{ n: string }>(`select count(*) as n from crm_segment_members where segment_id = $1`, [created.id]);

    const again: number[] = [];
    for (let i = 0; i < 3; i++) {
      const t = performance.now();
      await call(`/v3/segments/${created.id}/refresh`, {});
      again.push(performance.now() - t);
    }
    const evaluationMs = Math.min(...again);

    const headers = { authorization: `Bearer ${key}` };
    const list = await autocannonRun({ url: `${platform.url}/v3/segments/${created.id}/customers?limit=100`, headers, duration: 5, connections: 10 });
    const baseList = await autocannonRun({ url: `${platform.url}/v3/customers?limit=100`, headers, duration: 5, connections: 10 });
    return {
      customers: CUSTOMERS,
      members: Number(members?.n ?? 0),
      baseline_sql_count_ms: Math.round(baselineMs),
      first_evaluation_with_events_ms: Math.round(firstMs),
      evaluation_ms: Math.round(evaluationMs),
      evaluation_vs_count: Math.round((evaluationMs / Math.max(1, baselineMs)) * 10) / 10,
      under_5s: evaluationMs < 5000,
      members_list_rps: list.requestsPerSec,
      customers_list_rps: baseList.requestsPerSec,
      members_list_p99_ms: list.p99,
      errors: list.errors + list.non2xx + baseList.errors + baseList.non2xx,
    };
  },
};
