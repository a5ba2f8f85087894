import { proxyActivities } from '@temporalio/workflow';
import type { ErpActivities } from '../../activities/erp/index.ts';
import { DB_STEPS, type LedgerPostingInput } from './shared.ts';

const db = proxyActivities<ErpActivities>(DB_STEPS);

/**
 * Posts one outbox event of another area (a succeeded payment, a paid invoice, a refund) to the
 * ledger (`ledger-posting-evt_…`). Exactly once: the dispatcher starts it under the event's id (a
 * second start is refused), and the posting itself is unique per event in the database.
 */
export async function ledgerPostingWorkflow(input: LedgerPostingInput): Promise<string | null> {
  return db.postEventToLedger(input);
}
