import { Migration } from '@mikro-orm/migrations';

/**
 * More gateways (Adyen, PayPal) and per-account routing rules (domain/payments/routing.ts): an
 * account may choose the new gateways, rules pick a gateway by currency, amount or card brand
 * (with the next ones to fail over to before a charge is attempted), and a payment shows how it
 * was routed.
 */
export class Migration0082PaymentsGatewayRouting extends Migration {
  override name = '0082-payments-gateway-routing';

  override up(): void {
    this.addSql(`
      alter table payment_gateway_settings drop constraint payment_gateway_settings_live_gateway_check;
      alter table payment_gateway_settings add constraint payment_gateway_settings_live_gateway_check
        check (live_gateway in ('sandbox', 'stripe', 'adyen', 'paypal'));
      alter table payments add column routing jsonb null;

      create table payment_routing_rules (
        id text primary key,
        account_id text not null references accounts (id),
        livemode boolean not null,
        name text not null,
        priority integer not null,
        conditions jsonb not null,
        gateways text[] not null,
        enabled boolean not null,
        created_at timestamptz not null,
        updated_at timestamptz not null
      );
      create index payment_routing_rules_scope on payment_routing_rules (account_id, livemode, priority, id);
    `);
  }

  override down(): void {
    this.addSql(`
      drop table if exists payment_routing_rules;
      alter table payments drop column if exists routing;
    `);
  }
}
