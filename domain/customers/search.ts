/**
 * The text GET /v3/customers?q=… searches: email, name, first and last name and company name,
 * joined by U+001F (the unit separator). No API input may hold a control character
 * (api/http/input-limits.ts), so a search text never spans two fields, and `text ilike '%q%'`
 * matches exactly the customers where one of those fields contains q. One expression, so that one
 * trigram index (migration 0166) serves it; the index and the query must spell it alike.
 */
export const CUSTOMER_SEARCH_TEXT = (table: string): string =>
  ['email', 'name', 'first_name', 'last_name', "company ->> 'name'"].map((column) => `coalesce(${table}.${column}, '')`).join(" || E'\\x1f' || ");
