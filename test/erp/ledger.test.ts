import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { splitTax, termsDates } from '../../domain/erp/accounting.ts';
import { postTransaction } from '../../domain/erp/ledger.ts';
import { postEventToLedger } from '../../domain/erp/postings.ts';
import { scopedEm } from '../../domain/scope.ts';
import { newId } from '../../platform/ids.ts';
import { advance, card, newClock, newCustomer, newPlan } from '../billing/support.ts';
import { cardBody, waitForPayment } from '../payments/support.ts';
import type { TestPlatform } from '../support/platform.ts';
import { usePlatform, type Http } from '../support/use-platform.ts';

let platform: TestPlatform;
let http: Http;
let key: string;
let accountId: string;

usePlatform({
  worker: true, ownAccount: true,
  env: { RATE_LIMIT_PER_MINUTE: '100000', RATE_LIMIT_PER_DAY: '1000000', RATE_LIMIT_CONCURRENCY: '100', PAYMENTS_SYNC_WAIT_MS: '6000' },
}, (t) => ({ platform, http, key, accountId } = t));

async function post(body: Record<string, unknown>, expected = 201, headers: Record<string, string> = {}) {
  const res = await http('/v3/financial/transactions', { key, body, headers });
  expect(res.status, res.text).toBe(expected);
  return res.body;
}

const lines = (t: any) => t.journal_lines.map((l: any) => [l.account_code, l.debit, l.credit]);
const balanced = (t: any) => t.journal_lines.reduce((s: number, l: any) => s + l.debit_minor - l.credit_minor, 0) === 0;

async function until<T>(read: () => Promise<T>, done: (v: T) => boolean, what: string, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await read();
    if (done(v)) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 150));
  }
}

describe('the ledger', () => {
  it('seeds the default chart on first use and extends it; codes are unique', async () => {
    const chart = await http('/v3/financial/accounts', { key });
    expect(chart.status, chart.text).toBe(200);
    expect(chart.body.data.map((a: any) => a.code)).toEqual(['1000', '1010', '1200', '1300', '1400', '2000', '2100', '2200', '3000', '3900', '4000', '4100', '5000', '5100', '6000', '6100']);
    expect(chart.body.data.find((a: any) => a.code === '2100')).toMatchObject({ name: 'Goods received not invoiced', type: 'liability', system: true });
    const added = await http('/v3/financial/accounts', { key, body: { code: '6200', name: 'Travel', type: 'expense' } });
    expect(added.status, added.text).toBe(201);
    expect(added.body).toMatchObject({ object: 'ledger_account', code: '6200', system: false });
    const again = await http('/v3/financial/accounts', { key, body: { code: '6200', name: 'Travel again', type: 'expense' } });
    expect(again.status).toBe(409);
    expect(again.body.code).toBe('ledger_account_exists');
    const settings = await http('/v3/erp/settings', { key });
    expect(settings.body).toMatchObject({ base_currency: 'USD', approval_tiers: { single_approval_from: 1000, dual_approval_from: 10000 }, escalation_hours: 48 });
  });

  it('extracts inclusive tax half-even with the remainder on revenue: 100.00 incl. 19 % → 84.03 + 15.97', async () => {
    const t = await post({
      type: 'revenue', amount: 100.0, currency: 'USD', tax_inclusive: true, tax_rate: 19, payment_terms: 'net_30', date: '2025-03-01',
      description: 'Consulting, March', account_code: '4000',
    });
    expect(t).toMatchObject({ object: 'financial_transaction', status: 'posted', amount: 100, net_amount: 84.03, tax_amount: 15.97, due_date: '2025-03-31' });
    expect(lines(t)).toEqual([['1200', 100, 0], ['4000', 0, 84.03], ['2200', 0, 15.97]]);
    // More examples (amount, rate → net + tax): ties go to the even cent.
    const cases: [number, number, number, number][] = [
      [119, 19, 100, 19], [10, 19, 8.4, 1.6], [0.07, 7, 0.07, 0], [1.07, 7, 1, 0.07], [33.33, 20, 27.77, 5.56], [0.25, 25, 0.2, 0.05],
    ];
    for (const [amount, rate, net, tax] of cases) {
      const r = await post({ type: 'revenue', amount, currency: 'USD', tax_inclusive: true, tax_rate: rate });
      expect([amount, rate, r.net_amount, r.tax_amount]).toEqual([amount, rate, net, tax]);
      expect(balanced(r)).toBe(true);
    }
    // Exclusive: the tax comes on top (200.00 + 10 % → receivable 220.00).
    const ex = await post({ type: 'revenue', amount: 200, currency: 'USD', tax_rate: 10 });
    expect(lines(ex)).toEqual([['1200', 220, 0], ['4000', 0, 200], ['2200', 0, 20]]);
    // JPY has no decimals: 1000 incl. 10 % → 909 + 91.
    const jpy = await http('/v3/financial/exchange_rates', { key, body: { currency: 'JPY', rate: '0.0067', effective_date: '2025-01-01' } });
    expect(jpy.status, jpy.text).toBe(201);
    const y = await post({ type: 'revenue', amount: 1000, currency: 'JPY', tax_inclusive: true, tax_rate: 10, date: '2025-02-01' });
    expect([y.net_amount, y.tax_amount, y.base_amount]).toEqual([909, 91, 6.7]);
    expect(lines(y)).toEqual([['1200', 6.7, 0], ['4000', 0, 6.09], ['2200', 0, 0.61]]);
  });

  it('posts a balanced entry for every type', async () => {
    const customer = await newCustomer(http, key);
    const expense = await post({ type: 'expense', amount: 500, currency: 'USD', tax_rate: 19, account_code: '6200', payment_terms: 'net_15', date: '2025-01-10' });
    expect(lines(expense)).toEqual([['6200', 500, 0], ['1400', 95, 0], ['2000', 0, 595]]);
    expect(expense.due_date).toBe('2025-01-25');
    const refund = await post({ type: 'refund', amount: 59.5, currency: 'USD', tax_inclusive: true, tax_rate: 19, customer_id: customer });
    expect(lines(refund)).toEqual([['4100', 50, 0], ['2200', 9.5, 0], ['1000', 0, 59.5]]);
    expect(refund.customer_id).toBe(customer);
    const transfer = await post({ type: 'transfer', amount: 1000, currency: 'USD', account_code: '1010', counter_account_code: '1000' });
    expect(lines(transfer)).toEqual([['1010', 1000, 0], ['1000', 0, 1000]]);
    const capex = await post({ type: 'expense', amount: 250, currency: 'USD', account_code: '1300', tax_rate: 0 });
    expect(lines(capex)).toEqual([['1300', 250, 0], ['2000', 0, 250]]);
    for (const t of [expense, refund, transfer, capex]) expect(balanced(t)).toBe(true);
    // Foreign currency: 100 EUR at 1.1 → 110.00 USD.
    await http('/v3/financial/exchange_rates', { key, body: { currency: 'eur', rate: 1.1, effective_date: '2025-01-01' } });
    const eur = await post({ type: 'revenue', amount: 100, currency: 'EUR', date: '2025-02-01', tax_rate: 0 });
    expect(eur).toMatchObject({ currency: 'EUR', base_currency: 'USD', base_amount: 110, exchange_rate: '1.1' });
    expect(lines(eur)).toEqual([['1200', 110, 0], ['4000', 0, 110]]);
  });

  it('gives each payment term its due date and early-payment discount', async () => {
    const due = async (terms: string, date: string) => post({ type: 'revenue', amount: 100, currency: 'USD', payment_terms: terms, date });
    expect((await due('due_on_receipt', '2025-01-31')).due_date).toBe('2025-01-31');
    expect((await due('net_15', '2025-01-31')).due_date).toBe('2025-02-15');
    expect((await due('net_30', '2025-01-31')).due_date).toBe('2025-03-02');
    expect((await due('net_60', '2025-01-31')).due_date).toBe('2025-04-01');
    expect((await due('eom', '2024-02-10')).due_date).toBe('2024-02-29');
    const discounted = await due('2_10_net_30', '2025-01-31');
    expect(discounted).toMatchObject({ due_date: '2025-03-02', early_payment_discount: { date: '2025-02-10', percent: '2.00', amount: 2 } });
    expect((await due('net_30', '2025-01-31')).early_payment_discount).toBeNull();
  });

  it('refuses bad input with 4xx naming the field', async () => {
    const bad = async (body: Record<string, unknown>, path: string, status = 422) => {
      const res = await http('/v3/financial/transactions', { key, body });
      expect(res.status, res.text).toBe(status);
      if (status === 422) expect(res.body.errors.map((e: any) => e.path), res.text).toContain(path);
      expect(res.body.suggestion).toBeTruthy();
      return res.body;
    };
    const ok = { type: 'revenue', amount: 10, currency: 'USD' };
    expect((await bad({ ...ok, amount: 10.005 }, 'amount')).errors[0].message).toMatch(/at most 2 decimals/);
    await bad({ ...ok, amount: 100.5, currency: 'JPY' }, 'amount');
    await bad({ ...ok, amount: 1.2345, currency: 'KWD' }, 'amount');
    await bad({ ...ok, amount: 1e300 }, 'amount');
    await bad({ ...ok, amount: -5 }, 'amount');
    await bad({ ...ok, type: 'gift' }, 'type');
    await bad({ ...ok, description: 'a\u0000b' }, 'description');
    await bad({ ...ok, account_code: '9999' }, 'account_code');
    await bad({ ...ok, account_code: '1000' }, 'account_code'); // an asset is no revenue account
    await bad({ ...ok, type: 'transfer' }, 'account_code');
    await bad({ ...ok, type: 'transfer', account_code: '1010', tax_rate: 5 }, 'tax_rate');
    await bad({ ...ok, type: 'refund', payment_terms: 'net_30' }, 'payment_terms');
    await bad({ ...ok, payment_terms: 'net_45' }, 'payment_terms');
    await bad({ ...ok, currency: 'GBP' }, 'currency'); // no stored rate
    await bad({ ...ok, date: '31/01/2025' }, 'date');
    await bad({ ...ok, date: '2025-02-30' }, 'date');
    await bad({ ...ok, customer_id: 'cus_unknown' }, 'customer_id');
    await bad({ ...ok, tax_rate: 19.12345 }, 'tax_rate');
    await bad({ ...ok, surprise: true }, 'surprise');
    const deep = JSON.parse('{"metadata":'.repeat(70) + '1' + '}'.repeat(70));
    expect((await http('/v3/financial/transactions', { key, body: deep })).status).toBe(400);
    // Another account's project does not exist here.
    const otherKey = await platform.newKey({ accountId: await platform.newAccount() });
    const foreign = await http('/v3/projects', { key: otherKey, body: { name: 'Theirs', budget: 10, start_date: '2025-01-01', end_date: '2025-02-01' } });
    await bad({ ...ok, project_id: foreign.body.id }, 'project_id');
    expect((await http(`/v3/projects/${foreign.body.id}`, { key })).status).toBe(404);
  });

  it('replays the same Idempotency-Key and posts once', async () => {
    const body = { type: 'expense', amount: 12.34, currency: 'USD', description: 'idempotent' };
    const first = await post(body, 201, { 'idempotency-key': 'erp-idem-1' });
    const again = await http('/v3/financial/transactions', { key, body, headers: { 'idempotency-key': 'erp-idem-1' } });
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body.id).toBe(first.id);
    const reused = await http('/v3/financial/transactions', { key, body: { ...body, amount: 1 }, headers: { 'idempotency-key': 'erp-idem-1' } });
    expect(reused.status).toBe(422);
    const rows = await platform.sql(`select count(*)::int as n from financial_transactions where description = 'idempotent'`);
    expect(rows[0]!.n).toBe(1);
  });

  it('never edits an entry: reversal posts the mirror once; the database refuses changes and unbalanced entries', async () => {
    const t = await post({ type: 'revenue', amount: 119, currency: 'USD', tax_rate: 19, tax_inclusive: true, date: '2025-04-01' });
    const early = await http(`/v3/financial/transactions/${t.id}/reverse`, { key, body: { date: '2025-03-01' } });
    expect(early.status).toBe(422);
    const rev = await http(`/v3/financial/transactions/${t.id}/reverse`, { key, body: { date: '2025-04-02' } });
    expect(rev.status, rev.text).toBe(201);
    expect(rev.body).toMatchObject({ reversal_of: t.id, date: '2025-04-02', source: { type: 'reversal', id: t.id } });
    expect(lines(rev.body)).toEqual([['1200', 0, 119], ['4000', 100, 0], ['2200', 19, 0]]);
    const original = await http(`/v3/financial/transactions/${t.id}`, { key });
    expect(original.body).toMatchObject({ status: 'reversed', reversed_by: rev.body.id });
    const twice = await http(`/v3/financial/transactions/${t.id}/reverse`, { key, body: {} });
    expect(twice.status).toBe(409);
    expect(twice.body).toMatchObject({ code: 'invalid_state_transition', current_state: 'reversed' });
    const ofReversal = await http(`/v3/financial/transactions/${rev.body.id}/reverse`, { key, body: {} });
    expect(ofReversal.status).toBe(409);
    // No update or delete route exists, and the database refuses them too.
    expect((await http(`/v3/financial/transactions/${t.id}`, { key, method: 'DELETE' })).status).toBe(405);
    await expect(platform.sql('update journal_lines set debit = debit + 1 where transaction_id = $1', [t.id])).rejects.toThrow(/immutable/);
    await expect(platform.sql('delete from financial_transactions where id = $1', [t.id])).rejects.toThrow(/cannot be deleted/);
    await expect(platform.sql('update financial_transactions set amount = 1 where id = $1', [t.id])).rejects.toThrow(/immutable/);
    await expect(platform.sql(`
      with t as (insert into financial_transactions (id, account_id, livemode, type, status, amount, currency, base_currency, base_amount, exchange_rate,
        account_code, counter_account_code, tax_inclusive, tax_rate, net_amount, tax_amount, transaction_date, source_type, created_at)
        values ('txn_unbalanced', $1, false, 'transfer', 'posted', 1, 'USD', 'USD', 1, 1, '1000', '1010', false, 0, 1, 0, '2025-01-01', 'api', now()) returning id)
      insert into journal_lines (account_id, livemode, transaction_id, line_no, ledger_code, debit, credit, posted_on)
        select $1, false, id, 1, '1000', 1, 0, '2025-01-01' from t`, [accountId])).rejects.toThrow(/does not balance/);
  });

  it('lists with filters and pages', async () => {
    const customer = await newCustomer(http, key);
    const project = await http('/v3/projects', { key, body: { name: 'Filter', budget: 1000, start_date: '2024-06-01', end_date: '2024-06-30' } });
    const a = await post({ type: 'revenue', amount: 1, currency: 'USD', customer_id: customer, date: '2024-06-02' });
    const b = await post({ type: 'expense', amount: 2, currency: 'USD', project_id: project.body.id, date: '2024-06-03', account_code: '6100' });
    const c = await post({ type: 'transfer', amount: 3, currency: 'USD', account_code: '3000', date: '2024-06-04' });
    const list = async (q: string) => {
      const res = await http(`/v3/financial/transactions?${q}`, { key });
      expect(res.status, res.text).toBe(200);
      return res.body.data.map((t: any) => t.id);
    };
    expect(await list('date_gte=2024-06-01&date_lte=2024-06-30')).toEqual([c.id, b.id, a.id]);
    expect(await list('date_gte=2024-06-01&date_lte=2024-06-30&sort=created_at')).toEqual([a.id, b.id, c.id]);
    expect(await list(`customer_id=${customer}`)).toEqual([a.id]);
    expect(await list(`project_id=${project.body.id}`)).toEqual([b.id]);
    expect(await list('account_code=3000')).toEqual([c.id]);
    expect(await list('date_lte=2024-06-30&type=expense,transfer')).toEqual([c.id, b.id]);
    const page1 = await http('/v3/financial/transactions?date_gte=2024-06-01&date_lte=2024-06-30&limit=2', { key });
    expect(page1.body.has_more).toBe(true);
    const page2 = await http(`/v3/financial/transactions?date_gte=2024-06-01&date_lte=2024-06-30&limit=2&cursor=${page1.body.next_cursor}`, { key });
    expect(page2.body.data.map((t: any) => t.id)).toEqual([a.id]);
    expect((await http('/v3/financial/transactions?date_gte=2024-13-01', { key })).status).toBe(422);
  });

  it('keeps the trial balance balanced over two thousand random transactions and their reversals', async () => {
    const scope = { accountId, livemode: false };
    const codes = { revenue: ['4000', '4100'], expense: ['6000', '6100', '6200', '1300', '5000'], refund: ['4100', '6000'], transfer: ['1010', '3000', '2000'] };
    const arb = fc.record({
      type: fc.constantFrom('revenue', 'expense', 'refund', 'transfer') as fc.Arbitrary<keyof typeof codes>,
      amount: fc.integer({ min: 1, max: 10_000_000 }),
      currency: fc.constantFrom('USD', 'USD', 'EUR', 'JPY'),
      pick: fc.nat(),
      rate: fc.constantFrom('0', '7', '19', '20', '7.5'),
      inclusive: fc.boolean(),
      day: fc.integer({ min: 1, max: 28 }),
    });
    const inputs = fc.sample(arb, { numRuns: 2000, seed: 42 });
    const posted: string[] = [];
    for (let i = 0; i < inputs.length; i += 14) {
      await Promise.all(inputs.slice(i, i + 14).map(async (x) => {
        const options = codes[x.type];
        const id = newId('financialTransaction');
        await postTransaction(scopedEm(platform.orm, scope), scope, {
          id, type: x.type, amount: x.currency === 'JPY' ? Math.ceil(x.amount / 100) : x.amount, currency: x.currency,
          accountCode: options[x.pick % options.length]!, counterAccountCode: null, description: 'random', customerId: null, projectId: null,
          taxInclusive: x.inclusive, taxRate: x.type === 'transfer' ? null : x.rate, paymentTerms: null, date: `2025-05-${String(x.day).padStart(2, '0')}`, metadata: {},
        }, null);
        posted.push(id);
      }));
    }
    // A few reversals through the API as well.
    for (const id of posted.slice(0, 20)) expect((await http(`/v3/financial/transactions/${id}/reverse`, { key, body: { date: '2025-05-28' } })).status).toBe(201);
    const tb = await http('/v3/financial/reports/trial-balance?as_of=2025-05-31', { key });
    expect(tb.status, tb.text).toBe(200);
    expect(tb.body.balanced).toBe(true);
    expect(tb.body.total_debit_minor).toBe(tb.body.total_credit_minor);
    expect(tb.body.total_debit_minor).toBeGreaterThan(1_000_000);
    // Each account's sums equal what its lines say, counted independently.
    const sums = await platform.sql<{ code: string; d: string; c: string }>(
      `select ledger_code as code, sum(debit)::text as d, sum(credit)::text as c from journal_lines
        where account_id = $1 and livemode = false and posted_on <= '2025-05-31' group by ledger_code`, [accountId]);
    for (const s of sums) {
      const row = tb.body.accounts.find((a: any) => a.code === s.code);
      expect([s.code, row.debit_minor, row.credit_minor]).toEqual([s.code, Number(s.d), Number(s.c)]);
    }
    // Each entry balances on its own, too.
    const unbalanced = await platform.sql(`select transaction_id from journal_lines where account_id = $1 group by transaction_id having sum(debit) <> sum(credit)`, [accountId]);
    expect(unbalanced).toEqual([]);
    // An earlier date leaves later entries out.
    const before = await http('/v3/financial/reports/trial-balance?as_of=2025-04-30', { key });
    expect(before.body.total_debit_minor).toBeLessThan(tb.body.total_debit_minor);
  });
});

describe('the arithmetic, for any input', () => {
  it('tax splits are exact and within half a minor unit of the true tax; due dates never precede the document', () => {
    fc.assert(fc.property(
      fc.integer({ min: 1, max: 1e12 }), fc.integer({ min: 0, max: 999_999 }), fc.boolean(),
      (amount, rateUnits, inclusive) => {
        const rate = (rateUnits / 10_000).toFixed(4);
        const { gross, net, tax } = splitTax(amount, rate, inclusive);
        expect(net + tax).toBe(gross);
        expect(inclusive ? gross : net).toBe(amount);
        // |tax − exact| ≤ ½, compared on integers: |2·tax·D − 2·a·r| ≤ D with D = 10^6 (+ r when inclusive).
        const d = 1_000_000n + (inclusive ? BigInt(rateUnits) : 0n);
        const diff = 2n * BigInt(tax) * d - 2n * BigInt(amount) * BigInt(rateUnits);
        expect(diff < 0n ? -diff : diff).toBeLessThanOrEqual(d);
      },
    ), { numRuns: 2000 });
    fc.assert(fc.property(fc.date({ min: new Date('2000-01-01'), max: new Date('2099-12-31'), noInvalidDate: true }),
      fc.constantFrom('due_on_receipt', 'net_15', 'net_30', 'net_60', 'eom', '2_10_net_30') as fc.Arbitrary<Parameters<typeof termsDates>[1]>,
      (d, terms) => {
        const date = d.toISOString().slice(0, 10);
        const t = termsDates(date, terms);
        expect(t.dueDate >= date).toBe(true);
        if (t.discountDate) expect(t.discountDate > date && t.discountDate < t.dueDate).toBe(true);
      }), { numRuns: 500 });
  });
});

describe('postings from other areas, each exactly once', () => {
  it('a succeeded payment, its refunds and a paid subscription invoice reach the ledger once each', async () => {
    const paid = await http('/v3/payments/process', { key, body: { amount: 5000, currency: 'usd', payment_method: cardBody('4242424242424242') } });
    expect(paid.status, paid.text).toBe(201);
    const byPayment = async () => (await http(`/v3/financial/transactions?account_code=1010&limit=100`, { key })).body.data
      .filter((t: any) => t.description?.includes(paid.body.id));
    const [receipt] = await until(byPayment, (ts) => ts.length === 1, 'the payment posting');
    expect(receipt).toMatchObject({ type: 'transfer', source: { type: 'event' }, amount: 50 });
    expect(lines(receipt)).toEqual([['1010', 50, 0], ['1200', 0, 50]]);

    expect((await http(`/v3/payments/${paid.body.id}/refunds`, { key, body: { amount: 1500 } })).status).toBe(201);
    await until(byPayment, (ts) => ts.length === 2, 'the first refund posting');
    expect((await http(`/v3/payments/${paid.body.id}/refunds`, { key, body: {} })).status).toBe(201);
    const all = await until(byPayment, (ts) => ts.length === 3, 'the second refund posting');
    const refunds = all.filter((t: any) => t.type === 'refund').map((t: any) => lines(t));
    expect(refunds.sort()).toEqual([[['4100', 15, 0], ['1010', 0, 15]], [['4100', 35, 0], ['1010', 0, 35]]].sort());

    // A subscription's paid invoice: the sale (invoice.paid) and the cash (payment.succeeded) net the receivable to zero.
    const customer = await newCustomer(http, key);
    const plan = await newPlan(http, key, { amount: 2500 });
    const clock = await newClock(http, key, '2025-01-01T00:00:00Z');
    const sub = await http('/v3/subscriptions', { key, body: { customer_id: customer, plan_id: plan.id, auto_collection: true, payment_method: card(), test_clock: clock } });
    expect(sub.status, sub.text).toBe(201);
    await advance(http, key, clock, '2025-02-02T00:00:00Z');
    const forCustomer = async () => (await http(`/v3/financial/transactions?customer_id=${customer}`, { key })).body.data;
    const posted = await until(forCustomer, (ts) => ts.length === 2, 'the invoice and payment postings');
    const receivable = posted.flatMap((t: any) => t.journal_lines).filter((l: any) => l.account_code === '1200')
      .reduce((s: number, l: any) => s + l.debit_minor - l.credit_minor, 0);
    expect(receivable).toBe(0);
    expect(posted.map((t: any) => t.type).sort()).toEqual(['revenue', 'transfer']);

    // Exactly once: one transaction per source event, and replaying the dispatch starts nothing new.
    const dupes = await platform.sql(`select source_event_id from financial_transactions where source_event_id is not null group by 1 having count(*) > 1`);
    expect(dupes).toEqual([]);
    const events = await platform.sql<{ id: string; type: string; data: { object: Record<string, unknown> } }>(
      `select id, type, data from events where account_id = $1 and type in ('payment.succeeded', 'payment.refunded', 'invoice.paid')`, [accountId]);
    expect(events).toHaveLength(5);
    for (const e of events) {
      // The posting step run again (a retried activity, a second dispatch) finds the event's entry.
      const input = { eventId: e.id, eventType: e.type, accountId, livemode: false, object: e.data.object };
      const existing = await platform.sql<{ id: string }>('select id from financial_transactions where source_event_id = $1', [e.id]);
      expect(await postEventToLedger(scopedEm(platform.orm, { accountId, livemode: false }), input)).toBe(existing[0]!.id);
    }
    const after = await platform.sql<{ n: number }>(`select count(*)::int as n from financial_transactions where source_type = 'event' and account_id = $1`, [accountId]);
    expect(after[0]!.n).toBe(5);
    expect((await waitForPayment(http, key, paid.body.id, (p) => p.status === 'refunded')).amount_refunded).toBe(5000);
  });
});

describe('projects', () => {
  it('computes analytics as docs/erp.md says, by hand-computed examples', async () => {
    // 100 days (2025-01-01 … 2025-04-10); as of 2025-02-19, 50 days have elapsed.
    const created = await http('/v3/projects', {
      key, body: {
        name: 'Rollout', budget: 10000, start_date: '2025-01-01', end_date: '2025-04-10', status: 'in_progress',
        milestones: [{ name: 'Design', weight: 30, completed: true }, { name: 'Build', weight: 70 }],
      },
    });
    expect(created.status, created.text).toBe(201);
    const p = created.body;
    expect(p).toMatchObject({ object: 'project', budget: 10000, budget_minor: 1000000, currency: 'USD', status: 'in_progress' });
    const tag = { project_id: p.id, currency: 'USD', tax_rate: 0 };
    await post({ ...tag, type: 'expense', amount: 3000, account_code: '6100', date: '2025-01-20' });
    await post({ ...tag, type: 'expense', amount: 1000, date: '2025-02-01' });
    await post({ ...tag, type: 'revenue', amount: 5000, date: '2025-02-10' });
    await post({ ...tag, type: 'expense', amount: 500, date: '2025-03-01' }); // after as_of: not counted

    const analytics = await http(`/v3/projects/${p.id}/analytics?as_of=2025-02-19`, { key });
    expect(analytics.status, analytics.text).toBe(200);
    expect(analytics.body).toEqual({
      object: 'project_analytics', project_id: p.id, status: 'in_progress', currency: 'USD', as_of: '2025-02-19',
      budget: 10000, spent: 4000, remaining: 6000, revenue: 5000,
      // margin (5000 − 4000) / 5000 = 20 %; projected: revenue 5000 × 100/50 − cost 4000 × 100/50 = 2000.
      profitability: { margin_percent: 20, projected_profit: 2000 },
      // milestones: 30 of 100 weight done.
      timeline: { start_date: '2025-01-01', end_date: '2025-04-10', completion_percent: 30 },
    });

    // Without milestones, completion is elapsed time: 25 of 100 days on 2025-01-25.
    const plain = await http('/v3/projects', { key, body: { name: 'Plain', budget: 300, start_date: '2025-01-01', end_date: '2025-04-10' } });
    const early = await http(`/v3/projects/${plain.body.id}/analytics?as_of=2025-01-25`, { key });
    expect(early.body).toMatchObject({ status: 'planned', spent: 0, remaining: 300, profitability: { margin_percent: 0, projected_profit: 0 }, timeline: { completion_percent: 25 } });
    // A refund booked against revenue lowers it: margin (4500 − 4000)/4500 = 11.11 %.
    await post({ ...tag, type: 'refund', amount: 500, date: '2025-02-15' });
    const after = await http(`/v3/projects/${p.id}/analytics?as_of=2025-02-19`, { key });
    expect(after.body.revenue).toBe(4500);
    expect(after.body.profitability.margin_percent).toBe(11.11);
  });

  it('emits project.budget_exceeded once, and moves through its states', async () => {
    const p = (await http('/v3/projects', { key, body: { name: 'Tight', budget: 1000, start_date: '2025-01-01', end_date: '2025-12-31' } })).body;
    const expense = (amount: number) => post({ type: 'expense', amount, currency: 'USD', project_id: p.id, tax_rate: 0, date: '2025-02-01' });
    await expense(600);
    expect((await http(`/v3/projects/${p.id}`, { key })).body.budget_exceeded_at).toBeNull();
    await expense(600);
    await expense(100);
    const events = await platform.sql<{ n: number }>(`select count(*)::int as n from events where type = 'project.budget_exceeded' and data->'object'->>'id' = $1`, [p.id]);
    expect(events[0]!.n).toBe(1);
    expect((await http(`/v3/projects/${p.id}`, { key })).body.budget_exceeded_at).not.toBeNull();
    expect((await http(`/v3/projects/${p.id}/analytics?as_of=2025-03-01`, { key })).body.remaining).toBe(-300);

    const patch = (body: Record<string, unknown>) => http(`/v3/projects/${p.id}`, { key, method: 'PATCH', body });
    expect((await patch({ status: 'completed' })).body.code).toBe('invalid_state_transition');
    expect((await patch({ status: 'in_progress', budget: 5000, milestones: [{ name: 'All', weight: 1, completed: true }] })).body)
      .toMatchObject({ status: 'in_progress', budget: 5000, milestones: [{ name: 'All', weight: 1, completed: true, due_date: null }] });
    const done = await patch({ status: 'completed' });
    expect(done.body.status).toBe('completed');
    const reopened = await patch({ status: 'in_progress' });
    expect(reopened.status).toBe(409);
    expect(reopened.body).toMatchObject({ code: 'invalid_state_transition', current_state: 'completed' });
    expect((await patch({ end_date: '2024-01-01' })).status).toBe(422);
    expect((await http('/v3/projects', { key, body: { name: 'Bad', budget: 1, start_date: '2025-02-01', end_date: '2025-01-01' } })).status).toBe(422);
    expect((await http('/v3/projects', { key, body: { name: 'EUR', budget: 1, currency: 'EUR', start_date: '2025-01-01', end_date: '2025-02-01' } })).status).toBe(422);
    const listed = await http('/v3/projects?status=completed', { key });
    expect(listed.body.data.map((x: any) => x.id)).toEqual([p.id]);
  });
});
