import { afterAll, describe, expect, it } from 'vitest';
import type { TestPlatform } from '../support/platform.ts';
import { captureOutput, cardBody, findCardData } from './support.ts';
import { usePlatform, type Http } from '../support/use-platform.ts';

let platform: TestPlatform;
let http: Http;
let key: string;
let customer: string;
const output = captureOutput();

usePlatform({ worker: true, env: { PAYMENTS_SYNC_WAIT_MS: '8000', LOG_LEVEL: 'info' } }, async (t) => {
  ({ platform, http, key } = t);
  customer = (await http('/v3/customers', { key, body: { email: 'seller@example.com', name: 'Seller' } })).body.id;
});
afterAll(() => output.stop());

const split = (body: Record<string, unknown>, headers: Record<string, string> = {}) =>
  http('/v3/payments/marketplace/split', { key, headers, body: { currency: 'USD', payment_method: cardBody('4242424242424242'), ...body } });

async function gatewayTransfers(destinations: string[]) {
  return platform.sql<{ destination: string; amount: string; status: string; reversed_at: Date | null }>(
    'select destination, amount, status, reversed_at from sandbox_gateway_transfers where destination = any($1) order by created_at', [destinations]);
}

describe('POST /v3/payments/marketplace/split', () => {
  it('charges once and pays each destination; the fee stays with the platform', async () => {
    const res = await split({ total_amount: 100, platform_fee: 10, splits: [{ destination: 'acct_seller_a', amount: 60 }, { destination: customer, percent: 30 }] });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      status: 'succeeded', amount: 10000, currency: 'USD',
      split: {
        status: 'completed', platform_fee: 1000, rounding_remainder: 0,
        transfers: [{ destination: 'acct_seller_a', amount: 6000, status: 'paid' }, { destination: customer, amount: 3000, status: 'paid' }],
      },
    });
    expect(await gatewayTransfers(['acct_seller_a', customer])).toEqual([
      expect.objectContaining({ destination: 'acct_seller_a', amount: '6000', status: 'paid', reversed_at: null }),
      expect.objectContaining({ destination: customer, amount: '3000', status: 'paid', reversed_at: null }),
    ]);
    const status = await http(`/v3/payments/${res.body.id}/status`, { key });
    expect(status.body).toEqual(res.body);
  });

  it('gives the rounding remainder of percentage splits to the platform', async () => {
    const res = await split({ total_amount: 0.05, platform_fee: 0, splits: [{ destination: 'acct_half_a', percent: 50 }, { destination: 'acct_half_b', percent: 50 }] });
    expect(res.status).toBe(201);
    expect(res.body.split).toMatchObject({ platform_fee: 1, rounding_remainder: 1, transfers: [{ amount: 2 }, { amount: 2 }] });
  });

  it('refuses parts that do not add up (422), before charging anything', async () => {
    const before = await platform.sql('select id from sandbox_gateway_charges');
    const res = await split({ total_amount: 100, platform_fee: 10, splits: [{ destination: 'acct_a', amount: 60 }, { destination: 'acct_b', amount: 20.5 }] });
    expect(res.status).toBe(422);
    expect(res.body.errors).toEqual([{ path: 'splits', message: expect.stringContaining('come to 90.50 USD, but total_amount is 100.00 USD') }]);
    const decimals = await split({ total_amount: 100.001, platform_fee: 10, splits: [{ destination: 'acct_a', amount: 90.001 }] });
    expect(decimals.status).toBe(422);
    expect(decimals.body.errors.map((e: { path: string }) => e.path)).toEqual(['total_amount', 'splits.0.amount']);
    const unknown = await split({ total_amount: 10, platform_fee: 0, splits: [{ destination: 'cus_01jzzzzzzzzzzzzzzzzzzzzzzz', amount: 10 }] });
    expect(unknown.status).toBe(422);
    expect(unknown.body.errors[0].path).toBe('splits.0.destination');
    expect(await platform.sql('select id from sandbox_gateway_charges')).toHaveLength(before.length);
  });

  it('reverses the transfers already made and refunds the charge when one transfer fails', async () => {
    const res = await split({
      total_amount: 100, platform_fee: 10,
      splits: [{ destination: 'acct_comp_first', amount: 30 }, { destination: 'acct_comp_closed', amount: 30 }, { destination: 'acct_comp_never', amount: 30 }],
    });
    expect(res.status).toBe(422);
    expect(res.body).toMatchObject({ code: 'transfer_failed', errors: [{ path: 'splits.1.destination' }] });
    const payment = (await http(`/v3/payments/${res.body.payment_id}/status`, { key })).body;
    expect(payment).toMatchObject({
      status: 'refunded', amount_refunded: 10000,
      split: { status: 'reversed', transfers: [{ status: 'reversed' }, { status: 'failed', failure: { code: 'account_closed' } }, { status: 'canceled' }] },
    });
    const ledger = await gatewayTransfers(['acct_comp_first', 'acct_comp_closed', 'acct_comp_never']);
    expect(ledger).toHaveLength(2);
    expect(ledger[0]).toMatchObject({ destination: 'acct_comp_first', status: 'paid' });
    expect(ledger[0]!.reversed_at).not.toBeNull();
    expect(ledger[1]).toMatchObject({ destination: 'acct_comp_closed', status: 'failed' });
    const [charge] = await platform.sql<{ amount_refunded: string }>('select amount_refunded from sandbox_gateway_charges where idempotency_key = $1', [`${payment.id}:charge`]);
    expect(charge!.amount_refunded).toBe('10000');
    const events = await platform.sql<{ type: string }>(`select type from events where data->'object'->>'id' = $1 order by id`, [payment.id]);
    expect(events.map((e) => e.type)).toEqual(['payment.succeeded', 'payment.refunded']);
  });

  it('answers a repeated Idempotency-Key with the first split payment, also once the HTTP record has lapsed', async () => {
    const headers = { 'idempotency-key': 'split-replay-1' };
    const body = { total_amount: 20, platform_fee: 2, splits: [{ destination: 'acct_replay_a', amount: 18 }] };
    const first = await split(body, headers);
    expect(first.status).toBe(201);
    await platform.sql(`delete from idempotency_records where key = 'split-replay-1'`);
    const again = await split(body, headers);
    expect(again.status).toBe(201);
    expect(again.body).toMatchObject({ id: first.body.id, split: { status: 'completed', transfers: [{ destination: 'acct_replay_a', amount: 1800 }] } });
    expect(await gatewayTransfers(['acct_replay_a'])).toHaveLength(1);
    expect(await platform.sql(`select id from payments where request_idempotency_key = 'split-replay-1'`)).toHaveLength(1);
  });

  it('makes no transfer when the card is declined', async () => {
    const res = await split({ total_amount: 10, platform_fee: 1, payment_method: cardBody('4000000000009995'), splits: [{ destination: 'acct_declined_dest', amount: 9 }] });
    expect(res.status).toBe(402);
    expect(res.body.decline_code).toBe('insufficient_funds');
    expect(res.body.payment.split).toMatchObject({ status: 'canceled', transfers: [{ status: 'canceled' }] });
    expect(await gatewayTransfers(['acct_declined_dest'])).toHaveLength(0);
  });

  it('leaves no card number in the database, the logs or the workflow histories', async () => {
    // The logs were captured (every request logs its path at info), so their search below means something.
    expect(output.text()).toContain('/v3/payments/marketplace/split');
    expect(await findCardData(platform, ['4242424242424242', '4000000000009995'], output.text())).toEqual([]);
  });
});
