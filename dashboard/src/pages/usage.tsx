import { trpc, type Outputs } from '../api.ts';
import type { PageProps } from '../app.tsx';
import { Loading, PageHeader, useLoad } from '../ui.tsx';

type Day = Outputs['usage']['summary']['days'][number];

/** Requests per day as bars (errors stacked in red); a table with the same numbers follows for screen readers. */
function DailyChart({ days }: { days: Day[] }) {
  const width = 600, height = 160, gap = 2;
  const max = Math.max(1, ...days.map((d) => d.requests));
  const bar = width / days.length;
  return (
    <figure class="chart">
      <svg viewBox={`0 0 ${width} ${height + 20}`} role="img" aria-labelledby="chart-title" preserveAspectRatio="none">
        <title id="chart-title">Requests per day over the last 30 days (most: {max.toLocaleString()})</title>
        {days.map((d, i) => {
          const h = (d.requests / max) * height;
          const e = (d.errors / max) * height;
          return (
            <g key={d.day}>
              <title>{`${d.day}: ${d.requests} requests, ${d.errors} failed`}</title>
              <rect class="bar" x={i * bar + gap / 2} y={height - h} width={bar - gap} height={h} />
              <rect class="bar-error" x={i * bar + gap / 2} y={height - e} width={bar - gap} height={e} />
            </g>
          );
        })}
        <line x1="0" x2={width} y1={height} y2={height} class="axis" />
        <text x="0" y={height + 16} class="axis-label">{days[0]?.day}</text>
        <text x={width} y={height + 16} class="axis-label" text-anchor="end">{days.at(-1)?.day}</text>
      </svg>
      <figcaption class="muted">Requests per day (UTC); the red part failed.</figcaption>
    </figure>
  );
}

function percent(rate: number | null): string {
  return rate === null ? '—' : `${(rate * 100).toFixed(rate === 1 ? 0 : 1)}%`;
}

export function UsagePage({ mode }: PageProps) {
  const usage = useLoad(() => trpc.usage.summary.query({ mode }), [mode]);
  const u = usage.data;
  return (
    <>
      <PageHeader title="Usage">
        <button type="button" onClick={usage.reload}>Refresh</button>
      </PageHeader>
      <Loading loading={usage.loading && !u} error={usage.error} />
      {u ? (
        <>
          <dl class="stats">
            <div class="stat">
              <dt>Requests today</dt>
              <dd data-testid="requests-today">{u.requests_today.toLocaleString()}</dd>
              <dd class="muted">busiest key: {u.busiest_key_today.toLocaleString()} of {u.daily_limit.toLocaleString()} a day
                <progress max={u.daily_limit} value={u.busiest_key_today} aria-label="Busiest key's share of the daily limit" /></dd>
            </div>
            <div class="stat"><dt>Requests in the last minute</dt><dd data-testid="requests-per-minute">{u.requests_last_minute}</dd><dd class="muted">limit {u.minute_limit} per key</dd></div>
            <div class="stat"><dt>Average response time</dt><dd data-testid="average-response">{u.average_response_ms === null ? '—' : `${u.average_response_ms} ms`}</dd><dd class="muted">today</dd></div>
            <div class="stat"><dt>Success rate</dt><dd data-testid="success-rate">{percent(u.success_rate)}</dd><dd class="muted">today</dd></div>
          </dl>
          <h2>Last 30 days</h2>
          <DailyChart days={u.days} />
          <details>
            <summary>The numbers as a table</summary>
            <div class="table-wrap">
              <table>
                <caption class="visually-hidden">Requests per day</caption>
                <thead><tr><th scope="col">Day</th><th scope="col">Requests</th><th scope="col">Failed</th></tr></thead>
                <tbody>{u.days.filter((d) => d.requests > 0).map((d) => <tr key={d.day}><td>{d.day}</td><td>{d.requests}</td><td>{d.errors}</td></tr>)}</tbody>
              </table>
            </div>
          </details>
        </>
      ) : null}
    </>
  );
}
