import { defineEntity, p, type InferEntity } from '@mikro-orm/core';
import { scopeFilter, scopedColumns } from '../scope.ts';

/** An invoice template (domain/billing/invoice-templates.ts). */
export const InvoiceTemplate = defineEntity({
  name: 'InvoiceTemplate',
  tableName: 'invoice_templates',
  filters: scopeFilter,
  properties: {
    ...scopedColumns(),
    name: p.text(),
    logo: p.blob().nullable(),
    logoContentType: p.text().nullable(),
    accentColor: p.text(),
    footer: p.text().nullable(),
    memo: p.text().nullable(),
    locale: p.text(),
    numberPrefix: p.text(),
    customFields: p.json<{ name: string; value: string }[]>(),
    show: p.json<Record<string, boolean>>(),
    isDefault: p.boolean(),
    status: p.enum(['active', 'archived'] as const),
    metadata: p.json<Record<string, string>>(),
    createdAt: p.datetime(),
    updatedAt: p.datetime(),
  },
});
export type InvoiceTemplate = InferEntity<typeof InvoiceTemplate>;
