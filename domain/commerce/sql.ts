/**
 * Small helpers for the raw SQL of the commerce area. MikroORM's `em.execute` inlines parameters
 * (arrays are expanded), so lists travel as one JSON parameter read with `jsonb_to_recordset`.
 */

/** A timestamptz column as an ISO 8601 UTC string with milliseconds (`2025-03-14T09:30:00.000Z`). */
export function isoUtc(column: string): string {
  return `to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
}
