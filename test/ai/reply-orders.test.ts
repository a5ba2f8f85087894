import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { create, openShop, orderBody, stockedProduct, type Shop } from '../commerce/support.ts';
import { usePlatform } from '../support/use-platform.ts';
import { ScriptedModel, startAiApi } from './support.ts';

/**
 * A reply draft grounded in the customer's real open orders: orders placed through the API and
 * run by their workflows (a worker), read back by the reply-draft context.
 */
const t = usePlatform({ worker: true, ownAccount: true });
const model = new ScriptedModel();
let ai: Awaited<ReturnType<typeof startAiApi>>;
let shop: Shop;
let orderId: string;

beforeAll(async () => {
  ai = await startAiApi(t.platform, model);
  shop = await openShop(t.http, t.key);
  await stockedProduct(t.http, t.key, shop, 'MUG-1', 10);
  orderId = (await create(t.http, t.key, '/v3/orders', orderBody(shop, [{ sku: 'MUG-1', quantity: 2 }]))).id;
});
afterAll(() => ai?.close());

describe('POST /v3/ai/support/reply-draft with open orders', () => {
  it('gives the model the customer\'s open orders and keeps the order ids it references from them', async () => {
    model.set((turn) => ({ text: JSON.stringify({
      subject: 'Your mug order',
      body: turn.prompt.includes(orderId) ? `Your order ${orderId} (2 × MUG-1) is being prepared.` : 'We could not find your order.',
      tone: 'friendly', referenced_order_ids: [orderId], needs_human_review: false,
    }) }));
    const res = await ai.http('/v3/ai/support/reply-draft', { key: t.key, body: { customer_id: shop.customerId, message: 'When will my mugs arrive?' } });
    expect(res.status, res.text).toBe(200);
    expect(model.turns[0]!.prompt).toContain('MUG-1');
    expect(res.body.draft).toMatchObject({ body: `Your order ${orderId} (2 × MUG-1) is being prepared.`, referenced_order_ids: [orderId], needs_human_review: false });
    expect(res.body.citations).toContainEqual({ id: orderId, object: 'order', tool: 'list_orders', mentioned: true });

    // A key that may not read orders gets a draft without them (and the model never sees them).
    const key = await t.platform.newKey({ accountId: t.accountId, type: 'restricted', mode: 'test', permissions: ['ai:write', 'crm:read'] });
    const limited = await ai.http('/v3/ai/support/reply-draft', { key, body: { customer_id: shop.customerId, message: 'When will my mugs arrive?' } });
    expect(limited.status, limited.text).toBe(200);
    expect(limited.body.sources).not.toContain('list_orders');
    expect(model.turns.at(-1)!.prompt).not.toContain(orderId);
    expect(limited.body.draft).toMatchObject({ body: 'We could not find your order.', referenced_order_ids: [], needs_human_review: true });
  });
});
