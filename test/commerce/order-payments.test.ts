import { describe, expect, it } from 'vitest';
import type { TestPlatform } from '../support/platform.ts';
import type { Http } from '../support/use-platform.ts';
import { orderBody, stockedProduct, useShopPlatform, type Shop } from './support.ts';

let platform: TestPlatform;
let http: Http;
let key: string;
let shop: Shop;

useShopPlatform({ worker: true }, async (t) => {
  ({ platform, http, key, shop } = t);
  await stockedProduct(http, key, shop, 'PAY-TEE', 100, { price: 2000 });
});

const CARD = { type: 'card', card: { number: '4242424242424242', exp_month: 12, exp_year: new Date().getUTCFullYear() + 3, cvc: '123' } };

async function pay(amount: number, currency = 'USD', withKey = key): Promise<string> {
  const res = await http('/v3/payments/process', { key: withKey, body: { amount, currency, payment_method: CARD } });
  expect(res.status, res.text).toBe(201);
  expect(res.body.status).toBe('succeeded');
  return res.body.id;
}

const order = (extra: Record<string, unknown>) => http('/v3/orders', { key, body: orderBody(shop, [{ sku: 'PAY-TEE', quantity: 1 }], { payment_status: 'paid', ...extra }) });

describe('an order\'s payment_id', () => {
  it('is refused unless it is a succeeded payment of this account and mode for the order\'s amount and currency', async () => {
    const madeUp = await order({ payment_id: 'pay_made_up' });
    expect(madeUp.status).toBe(422);
    expect(madeUp.body).toMatchObject({ code: 'order_payment_invalid', errors: [{ path: 'payment_id' }] });

    const otherAccount = await platform.newKey({ accountId: await platform.newAccount() });
    const foreign = await order({ payment_id: await pay(2000, 'USD', otherAccount) });
    expect(foreign.status).toBe(422);
    expect(foreign.body.code).toBe('order_payment_invalid');

    const wrongAmount = await order({ payment_id: await pay(1999) });
    expect(wrongAmount.status).toBe(422);
    expect(wrongAmount.body.errors[0].message).toContain('totals 2000');

    const wrongCurrency = await order({ payment_id: await pay(2000, 'EUR') });
    expect(wrongCurrency.status).toBe(422);
    expect(wrongCurrency.body.errors[0].message).toContain('EUR');
  });

  it('pays one order only: the right payment is accepted, a second order with it is 409', async () => {
    const paymentId = await pay(2000);
    const first = await order({ payment_id: paymentId });
    expect(first.status, first.text).toBe(201);
    expect(first.body).toMatchObject({ payment_status: 'paid', payment_id: paymentId });
    const second = await order({ payment_id: paymentId });
    expect(second.status).toBe(409);
    expect(second.body).toMatchObject({ code: 'order_payment_used', order_id: first.body.id });
  });

  it('POST /v3/orders/{id}/pay checks the payment the same way', async () => {
    const unpaid = await http('/v3/orders', { key, body: orderBody(shop, [{ sku: 'PAY-TEE', quantity: 1 }]) });
    expect(unpaid.status, unpaid.text).toBe(201);
    const id = unpaid.body.id;
    const wrong = await http(`/v3/orders/${id}/pay`, { key, body: { payment_id: await pay(500) } });
    expect(wrong.status).toBe(422);
    expect(wrong.body.code).toBe('order_payment_invalid');

    const used = await pay(2000);
    expect((await order({ payment_id: used })).status).toBe(201);
    const taken = await http(`/v3/orders/${id}/pay`, { key, body: { payment_id: used } });
    expect(taken.status).toBe(409);
    expect(taken.body.code).toBe('order_payment_used');

    const good = await pay(2000);
    const paid = await http(`/v3/orders/${id}/pay`, { key, body: { payment_id: good } });
    expect(paid.status, paid.text).toBe(200);
    expect(paid.body).toMatchObject({ payment_status: 'paid', payment_id: good });
    // The index holds even past the check: a second row with the same payment cannot be written.
    await expect(platform.sql('update orders set payment_id = $1 where id <> $2 and payment_id is not null', [good, id])).rejects.toThrow(/orders_payment_id_unique/);
  });
});
