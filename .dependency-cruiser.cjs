// Area boundaries, checked in CI (`npm run check:deps`). Areas are the sub-folders of the layers
// (api/v3/<area>, api/admin/<area>, workflows/<area>, activities/<area>, domain/<area>); the rules
// name no area: they hold for every area in domain/areas.ts, including the ones added later.
const LAYER = '(?:api/v3|api/admin|workflows|activities|domain)';
// Platform modules that live under domain/ but belong to no area: every area may use them.
const PLATFORM = '^domain/(?:accounts|events|idempotency|requests)/';

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment:
        'No import cycles between files (a cycle of type-only imports between two files of one module is allowed; ' +
        'between areas, type imports count too: see the two rules below).',
      severity: 'error',
      from: {},
      to: { circular: true, viaOnly: { dependencyTypesNot: ['type-only'] } },
    },
    {
      name: 'no-area-internals',
      comment:
        "An area uses another area only through that area's public module (domain/<area>/public.ts) or its " +
        'workflow contract (workflows/<area>/shared.ts: ids, messages, input and result types).',
      severity: 'error',
      from: { path: `^${LAYER}/([^/]+)/` },
      to: {
        path: `^${LAYER}/[^/]+/`,
        pathNot: [`^${LAYER}/$1/`, PLATFORM, '^domain/[^/]+/public\\.ts$', '^workflows/[^/]+/shared\\.ts$', '^workflows/kit/'],
      },
    },
    {
      name: 'platform-imports-no-area',
      comment: 'Shared code (platform/, api/http/, db/, the platform modules in domain/) imports no area and not the list: only composition roots (api/app.ts, worker/, bin/, db/orm.ts) read the list.',
      severity: 'error',
      from: { path: `^(?:platform|api/http|db|workflows/kit)/|${PLATFORM}|^domain/[^/]+\\.ts$`, pathNot: '^domain/(?:areas|registry)\\.ts$|^db/(?:orm|migrate)\\.ts$' },
      to: { path: `^${LAYER}/[^/]+/|^domain/(?:areas|registry)\\.ts$`, pathNot: [PLATFORM, '^workflows/kit/'] },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(node_modules|dist|\\.tools|\\.data|coverage)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js'] },
  },
};
