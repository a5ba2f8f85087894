/**
 * One row per scenario for the summary table: each scenario reports its own numbers under its own
 * names; these are the ones the table reads (first match wins), so scenarios need no change.
 */
export interface SummaryRow {
  scenario: string;
  ours: number | null;
  baseline: number | null;
  ratio: number | null;
  p50_ms: number | null;
  p99_ms: number | null;
  rss_mb: number | null;
}

const OURS = ['orders_2x_per_sec', 'pipeline_rps', 'payments_per_sec', 'subscriptions_created_per_sec', 'hot_orders_per_sec', 'deliveries_per_sec'];
const BASELINE = ['orders_1x_per_sec', 'baseline_rps', 'empty_workflows_per_sec'];
const P50 = ['orders_2x_p50_ms', 'pipeline_p50_ms', 'payments_p50_ms', 'create_p50_ms', 'hot_p50_ms', 'latency_p50_ms'];
const P99 = ['orders_2x_p99_ms', 'pipeline_p99_ms', 'payments_p99_ms', 'create_p99_ms', 'hot_p99_ms', 'latency_p99_ms'];

function pick(result: Record<string, unknown>, keys: string[], fallback: RegExp): number | null {
  for (const key of keys) if (typeof result[key] === 'number') return result[key];
  const found = Object.entries(result).find(([k, v]) => fallback.test(k) && typeof v === 'number');
  return found ? (found[1] as number) : null;
}

export function summaryRow(scenario: string, result: Record<string, unknown>, rssMb: number | null): SummaryRow {
  const ours = pick(result, OURS, /_per_sec$|_rps$/);
  const baseline = pick(result, BASELINE, /^baseline_.*(per_sec|rps)$/);
  const ratio = typeof result.ratio === 'number' ? result.ratio
    : ours !== null && baseline ? Math.round((ours / baseline) * 100) / 100 : null;
  return {
    scenario: scenario.split(':')[0]!, ours, baseline, ratio,
    p50_ms: pick(result, P50, /p50_ms$/), p99_ms: pick(result, P99, /p99_ms$/), rss_mb: rssMb,
  };
}
