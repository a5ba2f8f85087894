import { writeFileSync } from 'node:fs';
import { schemaSdl } from './schema.ts';

/** Writes the checked-in SDL (api/v3/graphql/schema.graphql): `scripts/node24.sh node domain/graphql/print-sdl.ts`. */
writeFileSync(new URL('../../api/v3/graphql/schema.graphql', import.meta.url), schemaSdl);
