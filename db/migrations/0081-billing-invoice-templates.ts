import { Migration } from '@mikro-orm/migrations';

/**
 * Invoice templates, invoice numbers and stored PDFs (domain/billing/invoice-templates.ts,
 * domain/billing/invoice-documents.ts): one-off invoices start as drafts, so `status` gains
 * `draft` and `subscription_id` may be null; a finalised invoice carries its gap-free `number`.
 */
export class Migration0081BillingInvoiceTemplates extends Migration {
  override name = '0081-billing-invoice-templates';

  override up(): void {
    this.addSql(`
      create table invoice_templates (
        id text primary key,
        account_id text not null references accounts (id),
        livemode boolean not null,
        name text not null,
        logo bytea null,
        logo_content_type text null,
        accent_color text not null,
        footer text null,
        memo text null,
        locale text not null,
        number_prefix text not null,
        custom_fields jsonb not null default '[]',
        show jsonb not null,
        is_default boolean not null default false,
        status text not null check (status in ('active', 'archived')),
        metadata jsonb not null default '{}',
        created_at timestamptz not null,
        updated_at timestamptz not null
      );
      create index invoice_templates_scope on invoice_templates (account_id, livemode, id desc);
      create unique index invoice_templates_one_default on invoice_templates (account_id, livemode) where is_default;

      create table invoice_template_assignments (
        account_id text not null,
        livemode boolean not null,
        subject_id text not null,
        template_id text not null references invoice_templates (id),
        created_at timestamptz not null,
        primary key (account_id, livemode, subject_id)
      );

      create table invoice_number_sequences (
        account_id text not null,
        livemode boolean not null,
        prefix text not null,
        last_value bigint not null,
        primary key (account_id, livemode, prefix)
      );

      create table invoice_pdfs (
        invoice_id text primary key references invoices (id),
        account_id text not null,
        livemode boolean not null,
        template_id text null,
        pdf bytea not null,
        rendered_at timestamptz not null
      );

      alter table invoices drop constraint invoices_status_check;
      alter table invoices add constraint invoices_status_check check (status in ('draft', 'open', 'paid', 'uncollectible', 'void'));
      alter table invoices alter column subscription_id drop not null;
      alter table invoices add column number text null;
      alter table invoices add column template_id text null;
      alter table invoices add column finalized_at timestamptz null;
      create unique index invoices_number_unique on invoices (account_id, livemode, number) where number is not null;
    `);
  }

  override down(): void {
    this.addSql(`
      drop index if exists invoices_number_unique;
      alter table invoices drop column if exists finalized_at, drop column if exists template_id, drop column if exists number;
      drop table if exists invoice_pdfs; drop table if exists invoice_number_sequences;
      drop table if exists invoice_template_assignments; drop table if exists invoice_templates;
    `);
  }
}
