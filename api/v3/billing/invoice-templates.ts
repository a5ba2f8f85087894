import { z } from 'zod';
import { createDraftInvoice, finalizeInvoice, invoicePdf } from '../../../domain/billing/invoice-documents.ts';
import {
  archiveTemplate, assignedTemplate, assignTemplate, createTemplate, invoiceTemplateSchema, listTemplates, readTemplate, templateBody, updateTemplate,
} from '../../../domain/billing/invoice-templates.ts';
import { invoiceSchema } from '../../../domain/billing/schemas.ts';
import { findSubscription } from '../../../domain/billing/service.ts';
import { Customer } from '../../../domain/customers/public.ts';
import { notFound } from '../../../platform/errors.ts';
import { csv, currency, metadata } from '../../http/schemas.ts';
import { listQuery, listRoute } from '../../http/pagination.ts';
import { getRoute, route } from '../../http/route.ts';

const id = z.string().min(1).max(64);
const templateId = z.strictObject({ template_id: id });
const invoiceId = z.strictObject({ invoice_id: id });

const assignmentSchema = z.object({
  object: z.literal('invoice_template_assignment'), livemode: z.boolean(),
  subject_id: z.string().describe('The customer or subscription.'), template_id: z.string().nullable().describe('Null: the account default applies.'),
}).meta({ id: 'InvoiceTemplateAssignment' });

const assignmentBody = z.strictObject({ template_id: id.nullable().describe('An active template of the account, or null for the default.') });

/** Invoice templates, one-off invoices (draft → finalised) and the invoice PDF. */
export const invoiceTemplateRoutes = [
  route({
    method: 'post', path: '/v3/invoice_templates', operationId: 'createInvoiceTemplate', tag: 'Billing',
    summary: "Create an invoice template (the account's first becomes its default)", permission: 'billing:write', status: 201,
    bodyLimit: 1024 * 1024,
    body: z.strictObject({
      name: templateBody.name, logo: templateBody.logo.optional(), accent_color: templateBody.accent_color.optional(),
      footer: templateBody.footer.optional(), memo: templateBody.memo.optional(), locale: templateBody.locale.optional(),
      number_prefix: templateBody.number_prefix.optional(), custom_fields: templateBody.custom_fields.optional(), show: templateBody.show.optional(),
      is_default: templateBody.is_default.optional(), metadata: metadata.optional(),
    }),
    response: invoiceTemplateSchema,
    async handler({ em, auth, body, resourceId }) {
      const t = await createTemplate(em(), auth, await resourceId('invoiceTemplate'), body);
      return { body: t, headers: { Location: `/v3/invoice_templates/${t.id}` } };
    },
  }),
  listRoute({
    path: '/v3/invoice_templates', operationId: 'listInvoiceTemplates', tag: 'Billing', summary: 'List invoice templates', permission: 'billing:read',
    query: z.strictObject({ ...listQuery, status: csv(z.enum(['active', 'archived'])).optional() }),
    item: invoiceTemplateSchema,
    list: ({ em, query }, page) => listTemplates(em(), query, page),
  }),
  getRoute({
    path: '/v3/invoice_templates/{template_id}', operationId: 'getInvoiceTemplate', tag: 'Billing', summary: 'Retrieve an invoice template',
    permission: 'billing:read', readOnly: true, params: templateId, response: invoiceTemplateSchema,
    get: ({ deps, auth, params }) => readTemplate(deps.orm, auth, params.template_id),
  }),
  route({
    method: 'patch', path: '/v3/invoice_templates/{template_id}', operationId: 'updateInvoiceTemplate', tag: 'Billing',
    summary: 'Change an invoice template (already rendered PDFs keep their look)', permission: 'billing:write', status: 200,
    bodyLimit: 1024 * 1024, params: templateId,
    body: z.strictObject({
      name: templateBody.name.optional(), logo: templateBody.logo.optional(), accent_color: templateBody.accent_color.optional(),
      footer: templateBody.footer.optional(), memo: templateBody.memo.optional(), locale: templateBody.locale.optional(),
      number_prefix: templateBody.number_prefix.optional(), custom_fields: templateBody.custom_fields.optional(), show: templateBody.show.optional(),
      is_default: templateBody.is_default.optional(), metadata: metadata.optional(),
    }),
    response: invoiceTemplateSchema,
    async handler({ em, auth, params, body }) {
      return { body: await updateTemplate(em(), auth, params.template_id, body) };
    },
  }),
  route({
    method: 'post', path: '/v3/invoice_templates/{template_id}/archive', operationId: 'archiveInvoiceTemplate', tag: 'Billing',
    summary: 'Archive an invoice template (not the default while others exist)', permission: 'billing:write', status: 200,
    params: templateId, body: z.strictObject({}).optional(), response: invoiceTemplateSchema,
    async handler({ em, auth, params }) {
      return { body: await archiveTemplate(em(), auth, params.template_id) };
    },
  }),
  route({
    method: 'put', path: '/v3/customers/{customer_id}/invoice_template', operationId: 'setCustomerInvoiceTemplate', tag: 'Billing',
    summary: "Name the template of a customer's invoices (null: the account default)", permission: 'billing:write', status: 200,
    params: z.strictObject({ customer_id: id }), body: assignmentBody, response: assignmentSchema,
    async handler({ em, auth, params, body }) {
      if (!(await em().findOne(Customer, { id: params.customer_id }, { fields: ['id'] }))) throw notFound('customer', params.customer_id);
      await assignTemplate(em(), auth, params.customer_id, body.template_id);
      return { body: { object: 'invoice_template_assignment', livemode: auth.livemode, subject_id: params.customer_id, template_id: await assignedTemplate(em(), auth, params.customer_id) } };
    },
  }),
  route({
    method: 'put', path: '/v3/subscriptions/{subscription_id}/invoice_template', operationId: 'setSubscriptionInvoiceTemplate', tag: 'Billing',
    summary: "Name the template of a subscription's invoices (before the customer's and the default)", permission: 'billing:write', status: 200,
    params: z.strictObject({ subscription_id: id }), body: assignmentBody, response: assignmentSchema,
    async handler({ em, auth, params, body }) {
      await findSubscription(em(), params.subscription_id);
      await assignTemplate(em(), auth, params.subscription_id, body.template_id);
      return { body: { object: 'invoice_template_assignment', livemode: auth.livemode, subject_id: params.subscription_id, template_id: await assignedTemplate(em(), auth, params.subscription_id) } };
    },
  }),
  route({
    method: 'post', path: '/v3/invoices', operationId: 'createInvoice', tag: 'Billing',
    summary: 'Create a one-off draft invoice (finalise it to number it)', permission: 'billing:write', status: 201,
    body: z.strictObject({
      customer_id: id,
      currency,
      line_items: z.array(z.strictObject({
        description: z.string().trim().min(1).max(500),
        quantity: z.number().int().min(1).max(1_000_000),
        unit_amount: z.number().int('unit_amount is an integer number of minor units').min(0).max(99_999_999_999),
      })).min(1).max(100),
      days_until_due: z.number().int().min(0).max(365).default(30),
      tax_jurisdiction: z.string().regex(/^[A-Z]{2}(-[A-Z0-9]{1,3})?$/, 'expected a country code or country-region such as DE or US-CA').optional(),
      template_id: id.optional(),
    }),
    response: invoiceSchema,
    async handler({ em, auth, body, resourceId }) {
      const invoice = await createDraftInvoice(em(), auth, await resourceId('invoice'), body);
      return { body: invoice, headers: { Location: `/v3/invoices/${invoice.id}` } };
    },
  }),
  route({
    method: 'post', path: '/v3/invoices/{invoice_id}/finalize', operationId: 'finalizeInvoice', tag: 'Billing',
    summary: 'Finalise a draft invoice: it gets the next gap-free number and is open for payment', permission: 'billing:write', status: 200,
    params: invoiceId, body: z.strictObject({}).optional(), response: invoiceSchema,
    async handler({ em, auth, params, requestId }) {
      return { body: await finalizeInvoice(em(), auth, params.invoice_id, requestId) };
    },
  }),
  route({
    method: 'get', path: '/v3/invoices/{invoice_id}/pdf', operationId: 'getInvoicePdf', tag: 'Billing',
    summary: 'The invoice as a PDF (a finalised invoice is rendered once and stored; a draft carries a DRAFT watermark)',
    permission: 'billing:read', status: 200, params: invoiceId, response: z.string(),
    binary: { mediaType: 'application/pdf', description: 'The invoice as a PDF' },
    async handler({ em, auth, params }) {
      const { pdf, invoice } = await invoicePdf(em(), auth, params.invoice_id);
      return {
        body: null, raw: pdf,
        headers: {
          'Content-Disposition': `inline; filename="${invoice.number ?? invoice.id}.pdf"`,
          'Cache-Control': invoice.status === 'draft' ? 'no-store' : 'private, max-age=3600',
        },
      };
    },
  }),
];
