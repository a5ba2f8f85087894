import { AREAS } from '../../domain/areas.ts';
import { router } from './trpc.ts';

type UnionToIntersection<U> = (U extends unknown ? (x: U) => void : never) extends (x: infer I) => void ? I : never;
type AreaAdmin = UnionToIntersection<NonNullable<(typeof AREAS)[number]['admin']>>;

/**
 * Internal admin API (`/admin/trpc`): every area's admin routers (its descriptor's `admin`), merged
 * at the top level (`accounts.*`, `keys.*`, `billing.*`, …). They call the same domain services as
 * the REST routes and the CLI.
 */
export const adminRouter = router(Object.assign({}, ...AREAS.map((area) => area.admin ?? {})) as AreaAdmin);

export type AdminRouter = typeof adminRouter;
