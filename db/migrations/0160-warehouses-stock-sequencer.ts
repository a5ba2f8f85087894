import { Migration } from '@mikro-orm/migrations';

/** The ledger's row trigger (migration 0030's), with `wake` run after the row is written. */
const recordStockMovement = (wake: string) => `
      create or replace function bp_record_stock_movement() returns trigger language plpgsql as $$
      declare
        qb integer := 0; rb integer := 0; tb integer := 0;
      begin
        if tg_op = 'UPDATE' then
          qb := old.quantity; rb := old.reserved; tb := old.in_transit;
        end if;
        if qb = new.quantity and rb = new.reserved and tb = new.in_transit then
          return null;
        end if;
        insert into stock_movements (account_id, livemode, warehouse_id, sku, quantity_before, quantity_after,
          reserved_before, reserved_after, in_transit_before, in_transit_after, reason, reference, actor, request_id)
        values (new.account_id, new.livemode, new.warehouse_id, new.sku, qb, new.quantity, rb, new.reserved, tb, new.in_transit,
          coalesce(nullif(current_setting('bp.stock_reason', true), ''), 'stock_change'),
          nullif(current_setting('bp.stock_reference', true), ''),
          nullif(current_setting('bp.stock_actor', true), ''),
          nullif(current_setting('bp.stock_request', true), ''));
${wake}        return null;
      end $$;
`;

const WAKE_SEQUENCERS = `
        -- Wakes the sequencers at commit (one notification per transaction: PostgreSQL folds identical
        -- ones), unless the writer NOTIFYs after its commit itself (db/pool.ts, notifyAfterCommit).
        if current_setting('bp.notify', true) is distinct from 'after_commit' then
          perform pg_notify('bp_stock_pending', '');
        end if;
`;

/**
 * The realtime feed's sequence numbers are given after the commit instead of at it
 * (docs/warehouses.md, "Numbering after the commit"). Migration 0030's deferred trigger held the
 * account's counter row from the trigger to the end of the commit and NOTIFYed every change with
 * its payload, so every stock-changing commit of an account waited for the one before it, WAL flush
 * included. Now a writer only inserts its ledger row (`seq` null) and wakes the sequencers
 * (`bp_stock_pending`, one empty notification per transaction); an API process's sequencer numbers
 * the committed rows in insertion order under the counter row's lock, and announces each batch as a
 * range (`bp_stock_numbered`), which every API process reads from the ledger.
 *
 * Insertion order keeps each inventory row's changes in their commit order: a movement is inserted
 * while its transaction holds the inventory row's lock, so a later movement of the same row belongs
 * to a transaction that took that lock after the earlier one committed, and any snapshot that sees
 * the later one sees the earlier one too.
 */
export class Migration0160WarehousesStockSequencer extends Migration {
  override name = '0160-warehouses-stock-sequencer';

  override up(): void {
    this.addSql(`
      drop trigger stock_movements_sequence on stock_movements;
      drop function bp_sequence_stock_movement();

      create index stock_movements_pending on stock_movements (account_id, livemode, id) where seq is null;

${recordStockMovement(WAKE_SEQUENCERS)}
      -- Numbers the committed, unnumbered movements of one account and mode in insertion order:
      -- the last number given and how many this call gave. The counter row is locked first and the
      -- rows are read by the next statement, whose snapshot (READ COMMITTED) sees every batch
      -- numbered before the lock was granted: no gaps, no number twice. Announces the batch as a range.
      create function bp_sequence_stock(p_account text, p_livemode boolean, out last_seq bigint, out numbered bigint)
      language plpgsql as $$
      declare
        last bigint;
      begin
        select s.last_seq into last from stock_sequences s where s.account_id = p_account and s.livemode = p_livemode for update;
        if last is null then
          insert into stock_sequences as s (account_id, livemode, last_seq) values (p_account, p_livemode, 0) on conflict do nothing;
          select s.last_seq into last from stock_sequences s where s.account_id = p_account and s.livemode = p_livemode for update;
        end if;
        with pending as (
          select id, row_number() over (order by id) as rn from stock_movements
           where account_id = p_account and livemode = p_livemode and seq is null
        )
        update stock_movements m set seq = last + p.rn from pending p where m.id = p.id;
        get diagnostics numbered = row_count;
        last_seq := last + numbered;
        if numbered > 0 then
          update stock_sequences s set last_seq = last + numbered where s.account_id = p_account and s.livemode = p_livemode;
          perform pg_notify('bp_stock_numbered', json_build_object('a', p_account, 'l', p_livemode, 'f', last + 1, 't', last + numbered)::text);
        end if;
      end $$;

      -- One pass of a sequencer: every account and mode with unnumbered movements, always in the same
      -- order (two passes lock the counter rows alike and cannot deadlock). Returns how many it numbered.
      create function bp_sequence_pending_stock() returns bigint language plpgsql as $$
      declare
        s record;
        total bigint := 0;
      begin
        for s in select distinct account_id, livemode from stock_movements where seq is null order by account_id, livemode loop
          total := total + (select numbered from bp_sequence_stock(s.account_id, s.livemode));
        end loop;
        return total;
      end $$;
    `);
  }

  override down(): void {
    this.addSql(`
      select bp_sequence_pending_stock();
      drop function bp_sequence_pending_stock();
      drop function bp_sequence_stock(text, boolean);
      drop index stock_movements_pending;

${recordStockMovement('')}
      create function bp_sequence_stock_movement() returns trigger language plpgsql as $$
      declare
        next_seq bigint;
      begin
        insert into stock_sequences (account_id, livemode, last_seq) values (new.account_id, new.livemode, 1)
          on conflict (account_id, livemode) do update set last_seq = stock_sequences.last_seq + 1
          returning last_seq into next_seq;
        update stock_movements set seq = next_seq where id = new.id;
        perform pg_notify('bp_inventory', json_build_object(
          'a', new.account_id, 'l', new.livemode, 's', next_seq, 'id', new.id, 'w', new.warehouse_id, 'k', new.sku,
          'q', new.quantity_after, 'r', new.reserved_after, 't', new.in_transit_after,
          'dq', new.quantity_after - new.quantity_before, 'dr', new.reserved_after - new.reserved_before,
          'dt', new.in_transit_after - new.in_transit_before,
          'why', new.reason, 'ref', new.reference, 'at', to_char(new.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))::text);
        return null;
      end $$;
      create constraint trigger stock_movements_sequence after insert on stock_movements
        deferrable initially deferred for each row execute function bp_sequence_stock_movement();
    `);
  }
}
