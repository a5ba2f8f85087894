import type { MikroORM } from '@mikro-orm/postgresql';
import type { HousekeepingInput, HousekeepingResult } from '../../workflows/platform/shared.ts';

export interface PlatformActivityDeps {
  orm: MikroORM;
}

/** Activities of the platform area, built over their dependencies. */
export function createPlatformActivities({ orm }: PlatformActivityDeps) {
  return {
    async purgeExpiredRecords(input: HousekeepingInput): Promise<HousekeepingResult> {
      const conn = orm.em.fork().getConnection();
      const count = async (sql: string, params: unknown[] = []) =>
        Number((await conn.execute<{ n: string }[]>(`with d as (${sql} returning 1) select count(*) as n from d`, params))[0]?.n ?? 0);
      return {
        idempotencyRecords: await count(`delete from idempotency_records where expires_at < now()`),
        rateLimitWindows: await count(`delete from rate_limit_windows where window_start < now() - interval '2 days'`),
        requestLogs: await count(`delete from request_logs where created_at < now() - make_interval(days => ?)`, [input.requestLogRetentionDays]),
      };
    },
  };
}

export type PlatformActivities = ReturnType<typeof createPlatformActivities>;
