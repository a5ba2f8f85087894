import { z } from 'zod';
import { MAX_SUMMARY_DAYS, salesSummary } from '../../../domain/commerce/reports.ts';
import { csv, isoDate, currency } from '../../http/schemas.ts';
import { route } from '../../http/route.ts';

const amounts = z.record(z.string(), z.number().int()).describe('Minor units per currency.');
const salesSummarySchema = z
  .object({
    object: z.literal('sales_summary'),
    livemode: z.boolean(),
    timezone: z.string(),
    start_date: z.string(),
    end_date: z.string(),
    store_id: z.array(z.string()).nullable(),
    currency: z.array(z.string()).nullable(),
    totals: z.object({ orders: z.number().int(), units: z.number().int(), canceled_orders: z.number().int(), gross_sales: amounts, average_order_value: amounts }),
    days: z.array(z.object({ date: z.string(), orders: z.number().int(), units: z.number().int(), canceled_orders: z.number().int(), gross_sales: amounts })),
  })
  .meta({ id: 'SalesSummary' });

const timezone = z
  .string()
  .min(1)
  .max(64)
  .refine((tz) => {
    try {
      new Intl.DateTimeFormat('en-US', { timeZone: tz });
      return true;
    } catch {
      return false;
    }
  }, 'expected an IANA time zone name such as Europe/Berlin, America/New_York or UTC');

const summaryQuery = z.strictObject({
  start_date: isoDate.describe('First local date (in `timezone`), inclusive.'),
  end_date: isoDate.describe(`Last local date, inclusive; at most ${MAX_SUMMARY_DAYS} days after start_date.`),
  timezone: timezone.default('UTC').describe('IANA zone the days are cut in (DST-aware). Default UTC.'),
  store_id: csv(z.string().min(1)).optional(),
  currency: csv(currency).optional(),
});

export const reportRoutes = [
  route({
    method: 'get', path: '/v3/reports/sales-summary', operationId: 'salesSummary', tag: 'Commerce',
    summary: 'Sales per local day in an IANA time zone (correct across DST changes)', permission: 'commerce:read', status: 200,
    query: summaryQuery, response: salesSummarySchema,
    async handler({ em, auth, query }) {
      return { body: await salesSummary(em(), auth, query) };
    },
  }),
];
