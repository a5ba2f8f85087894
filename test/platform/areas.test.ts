import vm from 'node:vm';
import { describe, expect, it } from 'vitest';
import { API_VERSION } from '../../api/app.ts';
import { buildOpenApi } from '../../api/openapi.ts';
import { AREAS } from '../../domain/areas.ts';
import { entities, eventCatalog, migrations, permissionScopes, v3Routes, workerAreas } from '../../domain/registry.ts';
import type { AreaDescriptor } from '../../platform/area.ts';
import { buildWorkflowBundle } from '../../worker/worker.ts';

/** Every area in domain/areas.ts is wired into every place that reads the list. */
const areas: readonly AreaDescriptor[] = AREAS;
const routesOf = (area: AreaDescriptor) => (typeof area.routes === 'function' ? area.routes({ events: eventCatalog }) : area.routes ?? []);

describe('the area list', () => {
  it('names each area once, with a name that is also its folder and task queue', () => {
    const names = areas.map((a) => a.name);
    expect(new Set(names).size).toBe(names.length);
    for (const name of names) expect(name).toMatch(/^[a-z][a-z0-9-]*$/);
  });

  it("puts every area's routes in the OpenAPI document, under a permission the area declares", () => {
    const doc = buildOpenApi(v3Routes, [], API_VERSION) as { paths: Record<string, Record<string, { 'x-permission'?: string }>> };
    for (const area of areas) {
      for (const route of routesOf(area)) {
        const operation = doc.paths[route.path]?.[route.method];
        expect(operation, `${area.name}: ${route.method} ${route.path}`).toBeDefined();
        expect(operation!['x-permission']).toBe(route.permission);
        expect(area.permissions, `${area.name}: ${route.operationId} needs ${route.permission}`).toContain(route.permission.split(':')[0]);
      }
    }
    const documented = Object.values(doc.paths).reduce((n, ops) => n + Object.keys(ops).length, 0);
    expect(documented).toBe(areas.reduce((n, a) => n + routesOf(a).length, 0));
  });

  it("puts every area's permissions in the permission list", () => {
    for (const area of areas) for (const scope of area.permissions) expect(permissionScopes).toContain(scope);
    expect(new Set(permissionScopes).size).toBe(permissionScopes.length);
  });

  it("puts every area's event kinds in the catalog, attributed to the area", () => {
    for (const area of areas) {
      for (const kind of area.events ?? []) expect(eventCatalog.get(kind.type)?.area, kind.type).toBe(area.name);
    }
    expect(eventCatalog.kinds.length).toBe(areas.reduce((n, a) => n + (a.events?.length ?? 0), 0));
  });

  it("registers every area's entities with the ORM and applies its migrations in number order", () => {
    for (const area of areas) for (const entity of area.entities ?? []) expect(entities).toContain(entity);
    const names = migrations.map((m) => m.name);
    expect(names).toEqual([...names].sort());
    expect(new Set(names.map((n) => n.slice(0, 4))).size).toBe(names.length);
  });

  it("bundles every area's workflows for the worker, and runs a worker for each area that has workflows or activities", async () => {
    const { workflowTypes } = await buildWorkflowBundle();
    for (const area of areas) {
      if (!area.workflows) continue;
      const exported = Object.keys((await import(area.workflows.pathname)) as Record<string, unknown>);
      expect(exported.length, area.name).toBeGreaterThan(0);
      for (const name of exported) expect(workflowTypes, `${area.name}: ${name}`).toContain(name);
      expect(workerAreas).toContain(area);
    }
    for (const area of workerAreas) expect(area.workflows ?? area.activities).toBeDefined();
  });

  it("makes a workflow run instantiate its own area's workflow modules, not every area's", async () => {
    // What the SDK does at each run's start (its reusable V8 context gives every run its own module
    // cache): evaluate the bundle, import the workflows, look the run's type up.
    const { code } = await buildWorkflowBundle();
    const moduleCache: Record<string, unknown> = {};
    const context = vm.createContext({ __webpack_module_cache__: moduleCache });
    vm.runInContext(code, context);
    const workflows = (context as { __TEMPORAL__: { importWorkflows(): Record<string, unknown> } }).__TEMPORAL__.importWorkflows();
    const instantiated = () => Object.keys(moduleCache).filter((id) => id.startsWith('./workflows/'));
    expect(instantiated()).toEqual([]);

    expect(typeof workflows.paymentWorkflow).toBe('function');
    const areasInstantiated = new Set(instantiated().map((id) => id.split('/')[2]));
    expect([...areasInstantiated].sort()).toEqual(['kit', 'payments']);
  });
});
