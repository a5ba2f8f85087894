/** What PostgreSQL's refusals look like to the code that catches them, one place for every area. */

/**
 * PostgreSQL's unique_violation (23505), as pg or MikroORM reports it; with `constraint`, only
 * that index's (the name as the migration gave it).
 */
export function isUniqueViolation(err: unknown, constraint?: string): boolean {
  const e = err as { code?: string; constraint?: string; name?: string; message?: string } | null | undefined;
  if (e?.code !== '23505' && e?.name !== 'UniqueConstraintViolationException') return false;
  return constraint === undefined || e.constraint === constraint || (e.message ?? '').includes(constraint);
}

/** A refusal of `bp_assert` (migration 0140) with this code, as pg or MikroORM reports it. */
export function isAssertion(err: unknown, code: string): boolean {
  const e = err as { code?: string; message?: string } | null | undefined;
  return e?.code === 'P0001' && (e.message === code || (e.message ?? '').endsWith(` - ${code}`));
}
