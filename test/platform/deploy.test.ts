import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { composeConfig, ensureDockerCompose, type ComposeCommand, type ComposeModel } from '../../platform/docker-compose.ts';
import { PROJECT_ROOT } from '../../platform/executables.ts';
import { DEV_SERVER_DYNAMIC_CONFIG, SEARCH_ATTRIBUTES } from '../../platform/temporal-dev-server.ts';
import { dashboardQueries } from './support/dashboard.ts';

/**
 * docker-compose.yml, checked with Compose itself (`docker compose config`: the Compose
 * specification, profiles, anchors and variables; no Docker engine needed), and the files it mounts.
 */
const CORE = ['api', 'migrate', 'postgres', 'temporal', 'temporal-setup', 'temporal-ui', 'worker'];
const OBSERVABILITY = ['grafana', 'jaeger', 'prometheus'];
const ENV = { ADMIN_TOKEN: 'admin-token-0123456789', METRICS_TOKEN: 'scrape-token-0123456789', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://jaeger:4318' };

let compose: ComposeCommand;
let stack: ComposeModel;
let observed: ComposeModel;

beforeAll(async () => {
  // Found, or built with Go on a machine without Compose by the run's global setup before any test
  // (CI beforehand: scripts/ensure-docker-compose.ts); the timeout is for a file run without either.
  compose = await ensureDockerCompose();
  [stack, observed] = await Promise.all([
    composeConfig(compose, { env: ENV }),
    composeConfig(compose, { env: ENV, profiles: ['observability'] }),
  ]);
}, 900_000);

const portOf = (hostPort: string) => hostPort.split(':').at(-1);

describe('docker-compose.yml (docker compose config)', () => {
  it('is a valid Compose file whose observability profile adds Prometheus, Grafana and Jaeger to the stack', () => {
    expect(Object.keys(stack.services).sort()).toEqual(CORE);
    expect(Object.keys(observed.services).sort()).toEqual([...CORE, ...OBSERVABILITY].sort());
    for (const name of OBSERVABILITY) expect(observed.services[name]!.profiles).toEqual(['observability']);
    expect(observed.services.grafana!.image).toMatch(/^grafana\/grafana:/);
    expect(observed.services.jaeger!.image).toMatch(/^jaegertracing\//);
    expect(observed.services.prometheus!.image).toMatch(/^prom\/prometheus:/);
  });

  it('is checked against the Compose specification: a misspelt key is refused, naming the service and the key', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'bp-compose-'));
    try {
      const file = join(dir, 'docker-compose.yml');
      writeFileSync(file, readFileSync(join(PROJECT_ROOT, 'docker-compose.yml'), 'utf8').replace('restart: "no"', 'restarts: "no"'));
      await expect(composeConfig(compose, { env: ENV, file })).rejects.toThrow(/services\.[\w-]+ additional properties 'restarts' not allowed/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('runs the api, the worker and the migration from one image, in order', () => {
    const { api, worker, migrate } = stack.services;
    expect(api!.command).toEqual(['node', 'dist/api/main.js']);
    expect(worker!.command).toEqual(['node', 'dist/worker/main.js']);
    expect(migrate!.command).toEqual(['node', 'dist/db/migrate.js']);
    expect(new Set([api!.image, worker!.image, migrate!.image]).size).toBe(1);
    for (const service of [api!, worker!]) {
      expect(service.depends_on?.migrate?.condition).toBe('service_completed_successfully');
      expect(service.depends_on?.['temporal-setup']?.condition).toBe('service_completed_successfully');
      expect(service.environment?.TEMPORAL_ADDRESS).toBe('temporal:7233');
      expect(service.environment?.OTEL_EXPORTER_OTLP_ENDPOINT).toBe(ENV.OTEL_EXPORTER_OTLP_ENDPOINT);
    }
    expect(api!.environment?.ADMIN_TOKEN).toBe(ENV.ADMIN_TOKEN);
    expect(api!.ports?.map((p) => p.target)).toEqual([Number(api!.environment?.PORT)]);
  });

  it('registers the search attributes the workflows set, and gives Temporal the dev server\'s dynamic config', () => {
    const setup = stack.services['temporal-setup']!.command!.join('\n');
    const registered = [...setup.matchAll(/--name (\w+) --type (\w+)/g)].map((m) => [m[1], m[2]]);
    expect(Object.fromEntries(registered)).toEqual(SEARCH_ATTRIBUTES);

    const mount = stack.services.temporal!.volumes!.find((v) => v.target.startsWith('/etc/temporal/config/dynamicconfig/'))!;
    expect(mount.read_only).toBe(true);
    const dynamic = parseYaml(readFileSync(mount.source!, 'utf8')) as Record<string, { value: unknown }[]>;
    for (const [key, value] of Object.entries(DEV_SERVER_DYNAMIC_CONFIG).filter(([k]) => k.startsWith('matching.'))) {
      expect(dynamic[key]?.[0]?.value, key).toBe(value);
    }
  });

  it('has Prometheus scrape the API with METRICS_TOKEN, the worker\'s METRICS_PORT and the Temporal SDK\'s endpoint', () => {
    const { api, worker, prometheus } = observed.services;
    const config = parseYaml(observed.configs![prometheus!.configs![0]!.source]!.content!) as {
      scrape_configs: { job_name: string; metrics_path?: string; authorization?: { credentials: string }; static_configs: { targets: string[] }[] }[];
    };
    const job = (name: string) => config.scrape_configs.find((j) => j.job_name === name)!;
    expect(job('api').static_configs[0]!.targets).toEqual([`api:${api!.environment!.PORT}`]);
    expect(job('api').authorization?.credentials).toBe(ENV.METRICS_TOKEN);
    expect(api!.environment!.METRICS_TOKEN).toBe(ENV.METRICS_TOKEN);
    expect(job('worker').static_configs[0]!.targets).toEqual([`worker:${worker!.environment!.METRICS_PORT}`]);
    expect(job('temporal-sdk').static_configs[0]!.targets).toEqual([`worker:${portOf(worker!.environment!.TEMPORAL_METRICS_BIND_ADDRESS!)}`]);
    // The worker listens on every interface of its container for both.
    expect(worker!.environment!.TEMPORAL_METRICS_BIND_ADDRESS).toMatch(/^0\.0\.0\.0:/);
    expect(worker!.expose).toEqual(expect.arrayContaining([worker!.environment!.METRICS_PORT, portOf(worker!.environment!.TEMPORAL_METRICS_BIND_ADDRESS!)]));
    // Traces: Jaeger takes OTLP over HTTP where the services send it.
    expect(observed.services.jaeger!.environment?.COLLECTOR_OTLP_ENABLED).toBe('true');
    expect(observed.services.jaeger!.expose).toContain(new URL(ENV.OTEL_EXPORTER_OTLP_ENDPOINT).port);
  });

  it('mounts Grafana\'s provisioning and the checked-in dashboard, on the Prometheus data source', () => {
    const grafana = observed.services.grafana!;
    const mounted = (target: string) => grafana.volumes!.find((v) => v.target === target)!.source!;
    for (const volume of grafana.volumes!) {
      expect(volume.source!.startsWith(PROJECT_ROOT), volume.source).toBe(true);
      expect(existsSync(volume.source!), volume.source).toBe(true);
    }
    const provisioning = mounted('/etc/grafana/provisioning');
    const providers = parseYaml(readFileSync(join(provisioning, 'dashboards', 'business-platform.yml'), 'utf8')) as { providers: { options: { path: string } }[] };
    const dashboardsDir = providers.providers[0]!.options.path;
    const dashboardFile = join(mounted(dashboardsDir), 'business-platform.json');
    const sources = parseYaml(readFileSync(join(provisioning, 'datasources', 'prometheus.yml'), 'utf8')) as { datasources: { uid: string; type: string; url: string }[] };
    const prometheus = sources.datasources.find((d) => d.type === 'prometheus')!;
    expect(new URL(prometheus.url).hostname).toBe('prometheus');
    expect(Object.keys(observed.services)).toContain(new URL(prometheus.url).hostname);

    const queries = dashboardQueries(JSON.parse(readFileSync(dashboardFile, 'utf8')));
    expect(queries.length).toBeGreaterThanOrEqual(10);
    for (const q of queries) expect(q.datasourceUid, q.panel).toBe(prometheus.uid);
  });
});
