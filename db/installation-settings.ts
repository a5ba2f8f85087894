import { randomBytes } from 'node:crypto';
import type { Pool } from 'pg';

/**
 * A secret generated once per installation and kept in `installation_settings`: the first process
 * to need it inserts a random value (`on conflict do nothing`), and every process then reads the
 * row back, so processes starting at the same time agree on the one value that was inserted first.
 */
export async function installationSecret(pool: Pool, name: string, bytes = 32): Promise<string> {
  await pool.query(
    'insert into installation_settings (name, value) values ($1, $2) on conflict (name) do nothing',
    [name, randomBytes(bytes).toString('base64url')],
  );
  const { rows } = await pool.query<{ value: string }>('select value from installation_settings where name = $1', [name]);
  if (!rows[0]) throw new Error(`installation setting ${name} is missing right after it was created`);
  return rows[0].value;
}
