import { Migration } from '@mikro-orm/migrations';

/**
 * Marketplace splits without a card: a payment is funded by a card (`funding = 'card'`, every payment
 * before this) or by the platform's gateway balance (`'platform_balance'`, no charge, so no card
 * columns). `gateway_charge_reference`: the gateway's own charge behind a payment (Stripe's `ch_…`,
 * where `gateway_reference` is the PaymentIntent), the `source_transaction` of a card-funded split's
 * transfers. The sandbox gateway keeps each account's balance: charges and transfers record the
 * gateway account (`merchant`, `<account id>:<live|test>`) so it can be computed from its ledger.
 */
export class Migration0012PaymentsSplitFunding extends Migration {
  override name = '0012-payments-split-funding';

  override up(): void {
    this.addSql(`
      alter table payments
        add column funding text not null default 'card' check (funding in ('card', 'platform_balance')),
        add column balance_available bigint null,
        add column gateway_charge_reference text null,
        alter column card_brand drop not null,
        alter column card_last4 drop not null,
        alter column card_exp_month drop not null,
        alter column card_exp_year drop not null,
        alter column card_token drop not null,
        add constraint payments_card_when_card_funded check (funding <> 'card' or (card_token is not null and card_brand is not null and card_last4 is not null));
      alter table sandbox_gateway_charges add column merchant text null;
      alter table sandbox_gateway_transfers add column merchant text null;
      create index sandbox_gateway_charges_merchant on sandbox_gateway_charges (merchant, currency) where merchant is not null;
      create index sandbox_gateway_transfers_merchant on sandbox_gateway_transfers (merchant, currency) where merchant is not null;
    `);
  }

  override down(): void {
    this.addSql(`
      drop index if exists sandbox_gateway_transfers_merchant;
      drop index if exists sandbox_gateway_charges_merchant;
      alter table sandbox_gateway_transfers drop column merchant;
      alter table sandbox_gateway_charges drop column merchant;
      delete from payment_transfers where payment_id in (select id from payments where funding <> 'card');
      delete from payments where funding <> 'card';
      alter table payments drop constraint payments_card_when_card_funded, drop column gateway_charge_reference, drop column balance_available, drop column funding;
    `);
  }
}
