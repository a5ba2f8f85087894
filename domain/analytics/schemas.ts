import { z } from 'zod';

/** The analytics resources, once: each schema types its mapper, documents the API and the events. */

const major = (what: string) => z.number().describe(`${what}, in decimal major units of \`currency\` (e.g. 1234.56).`);
const date = z.string().meta({ format: 'date', example: '2025-03-14' });
const timestamp = z.string().meta({ format: 'date-time', example: '2025-03-14T09:30:00.000Z' });

export const revenueAnalyticsSchema = z
  .object({
    object: z.literal('revenue_analytics'),
    livemode: z.boolean(),
    period: z.string().describe('The period asked for: 7d, 30d, 90d, 12m or custom.'),
    start_date: date,
    end_date: date,
    timezone: z.string(),
    currency: z.string().describe('The reporting currency: every amount is in it, converted at the stored exchange rates.'),
    granularity: z.enum(['day', 'week', 'month']),
    total_revenue: major('Money received in the period, net of refunds'),
    growth_rate: z.number().nullable().describe('Percent change of total_revenue against the previous period of equal length; null when that was 0.'),
    previous_period: z.object({ start_date: date, end_date: date, total_revenue: z.number() }),
    refunds: major('Refunds in the period (already subtracted; 0 or negative)'),
    breakdown: z.object({
      subscriptions: major('Paid invoices, net of their refunds'),
      one_time: major('Payments that collected no invoice, net of their refunds'),
    }),
    forecast: z.object({
      next_30_days: z.number().nullable().describe('Forecast revenue of the 30 days after today (same model as GET /v3/analytics/revenue-forecasting); null with `reason` when history is too short.'),
      confidence: z.number().nullable().describe('1 − backtest MAPE (0–1): how well the model predicted the held-out tail.'),
      model: z.string().nullable(),
      reason: z.string().nullable(),
    }),
    trends: z.array(z.object({ date, revenue: z.number() })).describe('One point per bucket (`granularity`), labelled with its first date inside the period.'),
    mrr: z.object({
      current: major('Monthly recurring revenue at the end of the period'),
      new: major('MRR of customers who had none at the start'),
      expansion: major('MRR gained by customers who had some'),
      contraction: major('MRR lost by customers who kept some'),
      churned: major('MRR of customers who had some at the start and none at the end'),
    }),
  })
  .meta({ id: 'RevenueAnalytics' });

export const KPI_UNITS = ['currency', 'percent', 'count', 'hours', 'seconds', 'ratio', 'score'] as const;

export const kpiSchema = z
  .object({
    value: z.number().nullable(),
    previous: z.number().nullable().describe('The same KPI over the previous period of equal length.'),
    change_percent: z.number().nullable().describe('(value − previous) / |previous| × 100; null when either is null or previous is 0.'),
    unit: z.enum(KPI_UNITS),
    reason: z.string().nullable().describe('Why value is null (missing data is never replaced by a made-up number).'),
  })
  .meta({ id: 'Kpi' });

/** Every KPI, in the order documented in docs/analytics.md. */
export const KPI_NAMES = [
  'mrr', 'arr', 'active_subscriptions', 'churn_rate', 'arpu', 'ltv', 'orders', 'average_order_value', 'refund_rate',
  'order_fulfillment_time', 'on_time_delivery_rate', 'inventory_turnover', 'average_call_duration', 'points_redemption_rate',
  'monthly_recurring_revenue', 'customer_lifetime_value', 'customer_acquisition_cost', 'net_promoter_score', 'gross_margin',
] as const;
export type KpiName = (typeof KPI_NAMES)[number];

export const kpisSchema = z
  .object({
    object: z.literal('kpis'),
    livemode: z.boolean(),
    period: z.string(),
    start_date: date,
    end_date: date,
    previous_period: z.object({ start_date: date, end_date: date }),
    timezone: z.string(),
    currency: z.string().describe('Currency of every KPI whose unit is `currency`.'),
    kpis: z.object(Object.fromEntries(KPI_NAMES.map((n) => [n, kpiSchema])) as Record<KpiName, typeof kpiSchema>),
    updated_at: timestamp,
  })
  .meta({ id: 'Kpis' });

export const revenueForecastSchema = z
  .object({
    object: z.literal('revenue_forecast'),
    livemode: z.boolean(),
    currency: z.string(),
    granularity: z.enum(['day', 'week', 'month']),
    horizon: z.number().int().describe('Days forecast.'),
    model: z.enum(['mstl_ets_weekly', 'auto_ets']).describe('mstl_ets_weekly: MSTL (weekly season) with an AutoETS trend; auto_ets: AutoETS without season.'),
    backtest: z.object({
      holdout_points: z.number().int(),
      mape: z.number().nullable().describe('Mean absolute percentage error on the held-out tail, in percent.'),
    }),
    history: z.object({ start_date: date, end_date: date, points: z.number().int() }),
    points: z.array(z.object({
      date,
      forecast: z.number(),
      lower_80: z.number(), upper_80: z.number(),
      lower_95: z.number(), upper_95: z.number(),
    })),
  })
  .meta({ id: 'RevenueForecast' });

export const REPORT_TYPES = ['financial', 'customer', 'inventory', 'sales'] as const;
export const REPORT_FORMATS = ['pdf', 'excel', 'csv', 'json'] as const;
export const REPORT_STATUSES = ['queued', 'running', 'succeeded', 'failed', 'canceled'] as const;
export type ReportType = (typeof REPORT_TYPES)[number];
export type ReportFormat = (typeof REPORT_FORMATS)[number];
export type ReportStatus = (typeof REPORT_STATUSES)[number];

export const reportFiltersSchema = z
  .strictObject({
    store_id: z.array(z.string().min(1).max(64)).min(1).max(50).optional().describe('sales: only these stores.'),
    customer_id: z.string().min(1).max(64).optional().describe('financial, sales: only this customer.'),
    warehouse_id: z.array(z.string().min(1).max(64)).min(1).max(50).optional().describe('inventory: only these warehouses.'),
    sandbox_scenario: z.enum(['hold_at_half', 'render_failure']).optional()
      .describe('Test mode only: hold_at_half pauses the first render attempt at 50 % until canceled (up to 2 minutes); render_failure fails the report.'),
  })
  .meta({ id: 'ReportFilters' });

export const reportSchema = z
  .object({
    id: z.string(),
    object: z.literal('report'),
    livemode: z.boolean(),
    report_type: z.enum(REPORT_TYPES),
    format: z.enum(REPORT_FORMATS),
    status: z.enum(REPORT_STATUSES),
    progress: z.number().int().min(0).max(100).describe('Percent of rows rendered.'),
    date_range: z.object({ start: date, end: date }),
    timezone: z.string(),
    currency: z.string().nullable(),
    filters: reportFiltersSchema,
    row_count: z.number().int().nullable(),
    file: z.object({ name: z.string(), size: z.number().int(), content_type: z.string() }).nullable(),
    download_url: z.string().nullable().describe('Signed link to the file (`/files/reports/{id}?expires=…&signature=…`), opened without an API key; valid until download_url_expires_at. Null until the report succeeded, and after its file expired.'),
    download_url_expires_at: timestamp.nullable(),
    expires_at: timestamp.nullable().describe('When the file is deleted (retention).'),
    failure: z.object({ code: z.string(), message: z.string() }).nullable(),
    workflow_id: z.string(),
    created_at: timestamp,
    updated_at: timestamp,
    started_at: timestamp.nullable(),
    completed_at: timestamp.nullable(),
  })
  .meta({ id: 'Report' });

export type ReportView = z.output<typeof reportSchema>;
export type ReportFilters = z.output<typeof reportFiltersSchema>;
export type RevenueAnalyticsView = z.output<typeof revenueAnalyticsSchema>;
export type KpisView = z.output<typeof kpisSchema>;
export type KpiView = z.output<typeof kpiSchema>;
export type RevenueForecastView = z.output<typeof revenueForecastSchema>;
