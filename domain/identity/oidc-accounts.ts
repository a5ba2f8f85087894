import type { Pool } from 'pg';
import type { DashboardRole } from './users.ts';

/**
 * The provider's subjects. A user who signs in through the OAuth login form does so in one account
 * (a user may belong to several), so the subject is `<user id>.<account id>`: the tokens it gets act
 * in that account, with the user's current role there (`bp_admit_token` reads it on every request).
 * Ids are TypeIDs, which hold no dot.
 */
export function subjectOf(userId: string, accountId: string): string {
  return `${userId}.${accountId}`;
}

export function parseSubject(sub: string): { userId: string; accountId: string } | null {
  if (typeof sub !== 'string' || sub.length > 200) return null;
  const [userId, accountId, ...rest] = sub.split('.');
  return userId && accountId && !rest.length ? { userId, accountId } : null;
}

export interface OidcAccount {
  sub: string;
  userId: string;
  accountId: string;
  email: string;
  role: DashboardRole;
}

/** The subject's user and membership; null once the user or the membership is gone. */
export async function findOidcAccount(pool: Pool, sub: string): Promise<OidcAccount | null> {
  const parsed = parseSubject(sub);
  if (!parsed) return null;
  const { rows } = await pool.query<{ email: string; role: DashboardRole }>(
    `select u.email, m.role from dashboard_users u join account_members m on m.user_id = u.id
      where u.id = $1 and m.account_id = $2`,
    [parsed.userId, parsed.accountId],
  );
  const r = rows[0];
  return r ? { sub, ...parsed, email: r.email, role: r.role } : null;
}
