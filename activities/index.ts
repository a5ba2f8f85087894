import { createPlatformActivities, type PlatformActivityDeps } from './platform.ts';

/** Every area's activities; the worker registers them on the area's task queue. */
export type ActivityDeps = PlatformActivityDeps;

export function createActivities(deps: ActivityDeps) {
  return {
    platform: createPlatformActivities(deps),
  };
}
