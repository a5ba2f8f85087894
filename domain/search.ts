import { raw } from '@mikro-orm/postgresql';

/**
 * Free-text search (`?q=`) over several text columns, served by one trigram index.
 *
 * The columns are searched as one text: each coalesced to '' and joined by U+001F (the unit
 * separator). `q` can hold no control character (api/http/input-limits.ts), so a substring of that
 * text equal to `q` never contains the separator: it lies inside one column, and `text ilike '%q%'`
 * matches exactly the rows where one of the columns contains q. One expression, so that one
 * `pg_trgm` GIN index on it answers the search (migrations 0166 for customers, 0167 for products);
 * an index only serves the query when both spell the expression alike, which the list-indexes test
 * checks.
 */
export const searchText = (alias: string, columns: readonly string[]): string =>
  columns.map((column) => `coalesce(${alias}.${column}, '')`).join(" || E'\\x1f' || ");

/** Text for a LIKE pattern in which `%`, `_` and `\` stand for themselves (PostgreSQL's default escape). */
export function escapeLike(text: string): string {
  return text.replace(/[\\%_]/g, (c) => `\\${c}`);
}

/** A `where` condition (MikroORM): one of `columns` contains `q`, case-insensitively. */
export function textContains(columns: readonly string[], q: string): Record<string, unknown> {
  return { [raw((alias) => `(${searchText(alias, columns)})`)]: { $ilike: `%${escapeLike(q)}%` } };
}
