import type { MikroORM } from '@mikro-orm/postgresql';

/** Records an operator's steering action (who, why, on what) before it is answered. */
export async function recordAdminAction(
  orm: MikroORM,
  a: { operator: string; reason: string; action: string; target: string; accountId?: string; livemode?: boolean; details?: object },
): Promise<void> {
  await orm.em.fork().execute(
    `insert into analytics_admin_actions (operator, reason, action, target, account_id, livemode, details) values (?, ?, ?, ?, ?, ?, ?::jsonb)`,
    [a.operator, a.reason, a.action, a.target, a.accountId ?? null, a.livemode ?? null, JSON.stringify(a.details ?? {})],
  );
}
