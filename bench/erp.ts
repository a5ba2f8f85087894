import pg from 'pg';
import { autocannonRun, percentile, type BenchPlatform, type Scenario } from './harness.ts';

const CLIENTS = 10;
const DURATION_S = 10;

/**
 * `clients` loops inserting the rows one posting writes (a transaction and its three journal lines)
 * with plain INSERTs into copies of the ledger tables (`like … including defaults`: no triggers,
 * no checks, no HTTP, no validation) for `seconds`: the floor the posting path is measured against.
 */
async function plainInserts(platform: BenchPlatform, clients: number, seconds: number, into: { transactions: string; lines: string; accountId: string }) {
  await platform.sql(`create table if not exists bench_plain_transactions (like financial_transactions including defaults)`);
  await platform.sql(`create table if not exists bench_plain_lines (like journal_lines including defaults)`);
  const { transactions, lines, accountId } = into;
  const pool = new pg.Pool({ connectionString: platform.dbUrl, max: clients });
  const latencies: number[] = [];
  const until = Date.now() + seconds * 1000;
  let n = 0;
  try {
    await Promise.all(Array.from({ length: clients }, async () => {
      while (Date.now() < until) {
        const id = `txn_bench_${transactions.length}_${n++}`;
        const t0 = performance.now();
        await pool.query(
          `with t as (insert into ${transactions} (id, account_id, livemode, type, status, amount, currency, base_currency, base_amount,
              exchange_rate, account_code, counter_account_code, tax_inclusive, tax_rate, net_amount, tax_amount, transaction_date, source_type, created_at)
             values ($1, $2, false, 'revenue', 'posted', 10000, 'USD', 'USD', 10000, 1, '4000', '1200', true, 19, 8403, 1597, current_date, 'api', now())
             returning id)
           insert into ${lines} (id, account_id, livemode, transaction_id, line_no, ledger_code, debit, credit, posted_on)
           select nextval('journal_lines_id_seq'), $2, false, t.id, x.n, x.code, x.d, x.c, current_date
             from t cross join (values (1, '1200', 10000, 0), (2, '4000', 0, 8403), (3, '2200', 0, 1597)) as x(n, code, d, c)`,
          [id, accountId],
        );
        latencies.push(performance.now() - t0);
      }
    }));
  } finally {
    await pool.end();
  }
  latencies.sort((a, b) => a - b);
  return { perSec: Math.round(latencies.length / seconds), p50: Math.round(percentile(latencies, 50) * 10) / 10, p99: Math.round(percentile(latencies, 99) * 10) / 10 };
}

/**
 * Financial transactions posted per second end to end — HTTP → validation against the chart and
 * exchange rates → tax split (100.00 incl. 19 %) → one balanced journal entry (the database checks
 * balance and immutability) → 201 with the journal lines — at 10 concurrent clients, next to the
 * plain INSERT of the same rows in the same run. The ledger is checked to balance afterwards.
 */
export const scenario: Scenario = {
  name: 'erp: POST /v3/financial/transactions vs a plain INSERT of the same rows',
  async run(platform) {
    const key = await platform.newKey();
    const body = JSON.stringify({ type: 'revenue', amount: 100, currency: 'USD', tax_inclusive: true, tax_rate: 19, payment_terms: 'net_30', description: 'bench' });
    const request = {
      url: `${platform.url}/v3/financial/transactions`, method: 'POST' as const, body, connections: CLIENTS,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    };
    await autocannonRun({ ...request, duration: 3 }); // warm-up (and the ledger's first use)
    const api = await autocannonRun({ ...request, duration: DURATION_S });
    const [owner] = await platform.sql<{ account_id: string }>('select account_id from financial_transactions limit 1');
    const plainTables = { transactions: 'bench_plain_transactions', lines: 'bench_plain_lines', accountId: owner!.account_id };
    await plainInserts(platform, CLIENTS, 2, plainTables); // warm-up
    const plain = await plainInserts(platform, CLIENTS, DURATION_S, plainTables);
    // The same statement into the ledger's own tables: what the database's checks (balance trigger,
    // constraints, indexes) cost, apart from the API.
    const checked = await plainInserts(platform, CLIENTS, DURATION_S, { ...plainTables, transactions: 'financial_transactions', lines: 'journal_lines' });
    const [balance] = await platform.sql<{ d: string; c: string; n: string }>(
      `select sum(debit)::text as d, sum(credit)::text as c, count(distinct transaction_id)::text as n from journal_lines`);
    return {
      clients: CLIENTS,
      api_postings_per_sec: api.requestsPerSec,
      api_p50_ms: api.p50,
      api_p99_ms: api.p99,
      api_non2xx: api.non2xx + api.errors,
      plain_inserts_per_sec: plain.perSec,
      plain_p50_ms: plain.p50,
      plain_p99_ms: plain.p99,
      ratio_api_to_plain: Math.round((api.requestsPerSec / Math.max(plain.perSec, 1)) * 100) / 100,
      ledger_table_inserts_per_sec: checked.perSec,
      ledger_table_p50_ms: checked.p50,
      ratio_api_to_ledger_table_inserts: Math.round((api.requestsPerSec / Math.max(checked.perSec, 1)) * 100) / 100,
      ledger_entries: Number(balance?.n ?? 0),
      ledger_balanced: balance?.d === balance?.c,
    };
  },
};
