import type { EntityManager } from '@mikro-orm/postgresql';
import type { Scope } from '../scope.ts';

/**
 * Gap-free invoice numbers: `<prefix><000123>`, one counter row per account, mode and rendered
 * prefix (`{YYYY}` = the year of finalisation, UTC), incremented by an upsert inside the
 * transaction that finalises the invoice. The row lock orders concurrent finalisations; a
 * transaction that fails rolls its increment back with it, so there are no gaps and no twins.
 */
/** The next number of the series `prefixTemplate` (with `{YYYY}` = the year of `at`), in the caller's transaction. */
export async function nextInvoiceNumber(tx: EntityManager, scope: Scope, prefixTemplate: string, at: Date): Promise<string> {
  const prefix = prefixTemplate.replaceAll('{YYYY}', String(at.getUTCFullYear()));
  const [row] = await tx.execute<{ last_value: string }[]>(
    `insert into invoice_number_sequences (account_id, livemode, prefix, last_value) values (?, ?, ?, 1)
     on conflict (account_id, livemode, prefix) do update set last_value = invoice_number_sequences.last_value + 1
     returning last_value::text`,
    [scope.accountId, scope.livemode, prefix]);
  return `${prefix}${row!.last_value.padStart(6, '0')}`;
}

