import type { MikroORM } from '@mikro-orm/postgresql';
import type { Pool, PoolClient } from 'pg';
import { nativePool } from '../../db/pool.ts';
import { ApiError, conflict, notFound, validationFailed, type FieldError } from '../../platform/errors.ts';
import { newId } from '../../platform/ids.ts';
import { generatePassword, hashPassword, passwordProblem } from './passwords.ts';

/**
 * Dashboard users and their memberships. A user is one email and password; a membership gives the
 * user a role in one account, and a user may hold several. Every account keeps at least one owner:
 * the last one can be neither removed nor demoted.
 */
export const DASHBOARD_ROLES = ['owner', 'admin', 'developer', 'viewer'] as const;
export type DashboardRole = (typeof DASHBOARD_ROLES)[number];

export interface MemberView {
  object: 'account_member';
  id: string;
  email: string;
  account_id: string;
  role: DashboardRole;
  created_at: string;
}

export interface UserView {
  id: string;
  email: string;
  created_at: string;
  memberships: { account_id: string; role: DashboardRole }[];
}

const EMAIL_MAX = 254;
/** Deliberately loose (one @, a dot in the domain, no spaces): the address is a login name, never mailed to. */
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

function emailProblem(email: unknown): string | null {
  if (typeof email !== 'string') return 'must be a string';
  if (email.length > EMAIL_MAX) return `must be at most ${EMAIL_MAX} characters`;
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(email)) return 'must not contain control characters';
  if (!EMAIL.test(normalizeEmail(email))) return 'must be an email address such as ada@example.com';
  return null;
}

function roleProblem(role: unknown): string | null {
  return DASHBOARD_ROLES.includes(role as DashboardRole) ? null : `must be one of ${DASHBOARD_ROLES.join(', ')}`;
}

function check(errors: (FieldError | null)[]): void {
  const found = errors.filter((e): e is FieldError => e !== null);
  if (found.length) throw validationFailed(found);
}

const field = (path: string, message: string | null): FieldError | null => (message ? { path, message } : null);

interface MemberRow { user_id: string; email: string; account_id: string; role: DashboardRole; created_at: Date | string }

function memberView(r: MemberRow): MemberView {
  return { object: 'account_member', id: r.user_id, email: r.email, account_id: r.account_id, role: r.role, created_at: iso(r.created_at) };
}

/** The ORM's pool hands timestamps back as text. */
export const iso = (v: Date | string): string => new Date(v).toISOString();

async function inTransaction<T>(pool: Pool, fn: (c: PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('begin');
    const result = await fn(client);
    await client.query('commit');
    return result;
  } catch (err) {
    await client.query('rollback').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}

async function requireAccount(db: Pool | PoolClient, accountId: string): Promise<void> {
  const { rowCount } = await db.query('select 1 from accounts where id = $1', [accountId]);
  if (!rowCount) throw notFound('account', accountId);
}

const userExists = (email: string) => conflict('user_exists', `A dashboard user with the email ${email} already exists.`,
  'Add the existing user to the account as a member instead (addMember, or the dashboard\'s team page).');

/** Creates a user with a membership in `accountId`. */
export async function createUser(orm: MikroORM, input: { email: string; password: string; accountId: string; role: DashboardRole }): Promise<MemberView> {
  check([field('email', emailProblem(input.email)), field('password', passwordProblem(input.password)), field('role', roleProblem(input.role))]);
  const email = normalizeEmail(input.email);
  const passwordHash = await hashPassword(input.password);
  const pool = await nativePool(orm);
  return inTransaction(pool, async (db) => {
    await requireAccount(db, input.accountId);
    const id = newId('dashboardUser');
    const inserted = await db.query(
      `insert into dashboard_users (id, email, password_hash) values ($1, $2, $3) on conflict do nothing`,
      [id, email, passwordHash],
    );
    if (!inserted.rowCount) throw userExists(email);
    const { rows } = await db.query<MemberRow>(
      `insert into account_members (account_id, user_id, role) values ($1, $2, $3)
       returning user_id, $4::text as email, account_id, role, created_at`,
      [input.accountId, id, input.role, email],
    );
    return memberView(rows[0]!);
  });
}

/** Every user with their memberships (the CLI's `users list`), by email; one account's when named. */
export async function listUsers(orm: MikroORM, accountId?: string): Promise<UserView[]> {
  const pool = await nativePool(orm);
  const { rows } = await pool.query<{ id: string; email: string; created_at: Date | string; memberships: { account_id: string; role: DashboardRole }[] }>(
    `select u.id, u.email, u.created_at,
            coalesce(json_agg(json_build_object('account_id', m.account_id, 'role', m.role) order by m.account_id)
                     filter (where m.account_id is not null), '[]') as memberships
       from dashboard_users u left join account_members m on m.user_id = u.id
      where $1::text is null or exists (select 1 from account_members x where x.user_id = u.id and x.account_id = $1)
      group by u.id order by u.email`,
    [accountId ?? null],
  );
  return rows.map((r) => ({ id: r.id, email: r.email, created_at: iso(r.created_at), memberships: r.memberships }));
}

export async function listMembers(orm: MikroORM, accountId: string): Promise<MemberView[]> {
  const pool = await nativePool(orm);
  const { rows } = await pool.query<MemberRow>(
    `select m.user_id, u.email, m.account_id, m.role, m.created_at
       from account_members m join dashboard_users u on u.id = m.user_id
      where m.account_id = $1 order by m.created_at, m.user_id`,
    [accountId],
  );
  return rows.map(memberView);
}

/**
 * Adds a member to an account. An email that has no user yet gets one, with `password` or, when it
 * is missing, a generated one returned once as `temporary_password` (to hand over out of band; there
 * is no email delivery). An existing user keeps their password (`password` is then ignored).
 */
export async function addMember(
  orm: MikroORM, input: { accountId: string; email: string; role: DashboardRole; password?: string },
): Promise<{ member: MemberView; temporary_password?: string }> {
  check([
    field('email', emailProblem(input.email)), field('role', roleProblem(input.role)),
    field('password', input.password === undefined ? null : passwordProblem(input.password)),
  ]);
  const email = normalizeEmail(input.email);
  const generated = input.password === undefined ? generatePassword() : undefined;
  const passwordHash = await hashPassword(input.password ?? generated!);
  const pool = await nativePool(orm);
  return inTransaction(pool, async (db) => {
    await requireAccount(db, input.accountId);
    const created = await db.query<{ id: string }>(
      `insert into dashboard_users (id, email, password_hash) values ($1, $2, $3) on conflict do nothing returning id`,
      [newId('dashboardUser'), email, passwordHash],
    );
    const userId = created.rows[0]?.id
      ?? (await db.query<{ id: string }>('select id from dashboard_users where lower(email) = $1', [email])).rows[0]!.id;
    const { rows } = await db.query<MemberRow>(
      `insert into account_members (account_id, user_id, role) values ($1, $2, $3) on conflict do nothing
       returning user_id, $4::text as email, account_id, role, created_at`,
      [input.accountId, userId, input.role, email],
    );
    if (!rows.length) {
      throw conflict('member_exists', `${email} is already a member of this account.`, 'Change the member\'s role instead.');
    }
    return { member: memberView(rows[0]!), ...(created.rows.length && generated ? { temporary_password: generated } : {}) };
  });
}

const memberNotFound = (userId: string) => new ApiError({
  status: 404, code: 'not_found', title: 'Not Found',
  detail: `No member with id '${userId}' exists in this account.`,
  suggestion: 'List the account\'s members and use one of their ids.',
});

const lastOwner = () => conflict('last_owner', 'This is the account\'s last owner: an account always keeps at least one.',
  'Make another member an owner first, then change or remove this one.');

/**
 * Locks the account's memberships (in user order, so two changes never deadlock) and returns the
 * target's, or 404: another account's member id answers the same as an unknown one.
 */
async function lockMembers(db: PoolClient, accountId: string, userId: string): Promise<{ target: MemberRow; owners: number }> {
  if (typeof userId !== 'string' || userId.length > 64) throw memberNotFound(String(userId).slice(0, 64));
  const { rows } = await db.query<MemberRow>(
    `select m.user_id, u.email, m.account_id, m.role, m.created_at
       from account_members m join dashboard_users u on u.id = m.user_id
      where m.account_id = $1 order by m.user_id for update of m`,
    [accountId],
  );
  const target = rows.find((r) => r.user_id === userId);
  if (!target) throw memberNotFound(userId);
  return { target, owners: rows.filter((r) => r.role === 'owner').length };
}

export async function changeMemberRole(orm: MikroORM, input: { accountId: string; userId: string; role: DashboardRole }): Promise<MemberView> {
  check([field('role', roleProblem(input.role))]);
  const pool = await nativePool(orm);
  return inTransaction(pool, async (db) => {
    const { target, owners } = await lockMembers(db, input.accountId, input.userId);
    if (target.role === 'owner' && input.role !== 'owner' && owners <= 1) throw lastOwner();
    await db.query('update account_members set role = $3 where account_id = $1 and user_id = $2', [input.accountId, input.userId, input.role]);
    return memberView({ ...target, role: input.role });
  });
}

/** Removes a membership and signs the user out of that account (their sessions there are revoked). */
export async function removeMember(orm: MikroORM, input: { accountId: string; userId: string }): Promise<MemberView> {
  const pool = await nativePool(orm);
  return inTransaction(pool, async (db) => {
    const { target, owners } = await lockMembers(db, input.accountId, input.userId);
    if (target.role === 'owner' && owners <= 1) throw lastOwner();
    await db.query('delete from account_members where account_id = $1 and user_id = $2', [input.accountId, input.userId]);
    await db.query(
      'update dashboard_sessions set revoked_at = now() where account_id = $1 and user_id = $2 and revoked_at is null',
      [input.accountId, input.userId],
    );
    return memberView(target);
  });
}

export interface Credentials { userId: string; email: string; accountId: string; role: DashboardRole; passwordHash: string }

/**
 * The user and membership a sign-in would open: the named account, or the user's oldest membership.
 * Null when the email is unknown or the user is no member of the account (the caller answers both
 * the same way as a wrong password).
 */
export async function findCredentials(pool: Pool, email: string, accountId?: string): Promise<Credentials | null> {
  const { rows } = await pool.query<{ user_id: string; email: string; account_id: string; role: DashboardRole; password_hash: string }>(
    `select u.id as user_id, u.email, m.account_id, m.role, u.password_hash
       from dashboard_users u join account_members m on m.user_id = u.id
      where lower(u.email) = $1 and ($2::text is null or m.account_id = $2)
      order by m.created_at, m.account_id limit 1`,
    [normalizeEmail(email), accountId ?? null],
  );
  const r = rows[0];
  return r ? { userId: r.user_id, email: r.email, accountId: r.account_id, role: r.role, passwordHash: r.password_hash } : null;
}
