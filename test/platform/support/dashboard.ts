/**
 * Reading the checked-in Grafana dashboard (deploy/observability/grafana/dashboards): its panels'
 * PromQL queries, and the metric and label names each one reads, so tests can hold the dashboard
 * to what the processes export.
 */

export interface DashboardQuery {
  panel: string;
  expr: string;
  datasourceUid: string | undefined;
}

interface Panel {
  title?: string;
  datasource?: { uid?: string };
  targets?: { expr?: string; datasource?: { uid?: string } }[];
  panels?: Panel[];
}

/** Every query of the dashboard (rows' nested panels included), with the data source it runs on. */
export function dashboardQueries(dashboard: { panels?: Panel[] }): DashboardQuery[] {
  const out: DashboardQuery[] = [];
  const walk = (panels: Panel[] = []) => {
    for (const panel of panels) {
      for (const target of panel.targets ?? []) {
        if (target.expr) out.push({ panel: panel.title ?? '(untitled)', expr: target.expr, datasourceUid: target.datasource?.uid ?? panel.datasource?.uid });
      }
      walk(panel.panels);
    }
  };
  walk(dashboard.panels);
  return out;
}

const KEYWORDS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'and', 'or', 'unless', 'bool', 'offset', 'inf', 'nan']);

/**
 * The metric names a PromQL expression selects and the label names it groups, matches or filters
 * by. Enough PromQL for dashboards: selectors, functions, aggregations with `by`/`without`, ranges.
 */
export function promqlNames(expr: string): { metrics: string[]; labels: string[] } {
  const labels = new Set<string>();
  let s = expr.replace(/"(?:[^"\\]|\\.)*"/g, '""').replace(/\[[^\]]*\]/g, ' ');
  s = s.replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)/g, (_, list: string) => {
    for (const name of list.split(',').map((l) => l.trim()).filter(Boolean)) labels.add(name);
    return ' ';
  });
  s = s.replace(/\{([^}]*)\}/g, (_, inner: string) => {
    for (const m of inner.matchAll(/([a-zA-Z_]\w*)\s*(?:=~|!~|!=|=)/g)) labels.add(m[1]!);
    return ' ';
  });
  const metrics = new Set<string>();
  for (const m of s.matchAll(/(?<![\w.])[a-zA-Z_:][\w:]*/g)) {
    const rest = s.slice(m.index + m[0].length).trimStart();
    if (rest.startsWith('(') || KEYWORDS.has(m[0].toLowerCase())) continue;
    metrics.add(m[0]);
  }
  return { metrics: [...metrics], labels: [...labels] };
}

/** Sample names and, for each, the label names its samples carry, from a Prometheus text page. */
export function exposition(page: string): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  for (const line of page.split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})?\s/.exec(line);
    if (!m) continue;
    const names = out.get(m[1]!) ?? new Set<string>();
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_]\w*)="/g)) names.add(l[1]!);
    out.set(m[1]!, names);
  }
  return out;
}
