import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { notifyAfterCommit, notifyAfterCommitStatement } from '../../db/pool.ts';
import { eventually, openShop, orderBody, stockedProduct, type Shop } from '../commerce/support.ts';
import type { TestPlatform } from '../support/platform.ts';
import { usePlatform, type Http } from '../support/use-platform.ts';

let platform: TestPlatform;
let http: Http;
let key: string;
let shop: Shop;
usePlatform({ worker: true, env: { LOG_LEVEL: 'error' } }, async (t) => {
  ({ platform, http, key } = t);
  shop = await openShop(http, key);
  await stockedProduct(http, key, shop, 'NAC-1', 1000);
});

/** A connection that LISTENs on the channels the outbox and the stock ledger wake their readers on. */
let listener: pg.Client;
const heard: { channel: string }[] = [];
beforeAll(async () => {
  listener = new pg.Client({ connectionString: platform.dbUrl });
  await listener.connect();
  listener.on('notification', (n) => heard.push({ channel: n.channel }));
  await listener.query('listen bp_events; listen bp_stock_pending');
});
afterAll(() => listener.end());

const channels = () => heard.map((h) => h.channel).sort();
/** Waits until the server has sent what is on its way (a round trip on the listening connection delivers earlier notifications first). */
const settle = () => listener.query('select 1');

describe('NOTIFY after the commit (db/pool.ts)', () => {
  it('the outbox and stock triggers NOTIFY at commit, unless the transaction leaves it to the writer', async () => {
    const [level] = await platform.sql<{ warehouse_id: string }>(`select warehouse_id from inventory_levels where sku = 'NAC-1'`);
    const writer = new pg.Client({ connectionString: platform.dbUrl });
    await writer.connect();
    try {
      const change = (extra: string) => writer.query(`begin; ${extra}
        update inventory_levels set quantity = quantity + 1 where warehouse_id = '${level!.warehouse_id}' and sku = 'NAC-1'; commit;`);
      heard.length = 0;
      await change('');
      await eventually(async () => heard.length > 0, 5000, 'the trigger\'s NOTIFY');
      expect(channels()).toEqual(['bp_stock_pending']);

      heard.length = 0;
      await change(`${notifyAfterCommitStatement.sql};`);
      await new Promise((r) => setTimeout(r, 200));
      await settle();
      expect(heard).toEqual([]); // committed, nobody woken yet

      notifyAfterCommit(platform.orm.em.fork());
      await eventually(async () => heard.length >= 2, 5000, 'the NOTIFY after the commit');
      expect(channels()).toEqual(['bp_events', 'bp_stock_pending']);
    } finally {
      await writer.end();
    }
  });

  it('sends one NOTIFY at a time, and one more for the commits that asked meanwhile', async () => {
    heard.length = 0;
    const em = platform.orm.em.fork();
    for (let i = 0; i < 50; i++) notifyAfterCommit(em);
    await eventually(async () => heard.filter((h) => h.channel === 'bp_events').length >= 2, 5000, 'two NOTIFYs');
    await new Promise((r) => setTimeout(r, 200));
    await settle();
    expect(heard.filter((h) => h.channel === 'bp_events')).toHaveLength(2);
  });

  it('an order wakes the dispatcher and the stock sequencer after its commit, and its event is delivered', async () => {
    heard.length = 0;
    const res = await http('/v3/orders', { key, body: orderBody(shop, [{ sku: 'NAC-1', quantity: 1 }]) });
    expect(res.status, res.text).toBe(201);
    await eventually(async () => channels().includes('bp_events') && channels().includes('bp_stock_pending'), 5000, 'both channels');
    // The dispatcher took the event from the outbox (its workflow was started from it).
    await eventually(async () => (await platform.sql<{ confirmed: boolean }>(
      'select workflow_confirmed_at is not null as confirmed from orders where id = $1', [res.body.id]))[0]?.confirmed === true, 30_000, 'the order workflow');
    // The movement was numbered for the realtime feed.
    await eventually(async () => (await platform.sql<{ n: number }>(
      'select count(*)::int as n from stock_movements where reference = $1 and seq is not null', [res.body.id]))[0]?.n === 1, 10_000, 'the numbered movement');
  });
});
