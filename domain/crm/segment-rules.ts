import { z } from 'zod';
import { SUBSCRIPTION_STATUSES } from '../../workflows/billing/shared.ts';
import { CUSTOMER_TYPES } from '../customers/public.ts';

/**
 * Segment rules: conditions over a customer's fields and metrics, combined with `all` (and) or
 * `any` (or), nested up to `MAX_DEPTH` groups, compiled to one SQL predicate over
 * `customers c` joined with the metrics snapshot `crm_customer_metrics m`. Values are always bound
 * parameters; fields and operators come from the fixed tables below, so no input reaches the SQL
 * text. Pure (zod only).
 */

export const LIFECYCLE_STAGE_VALUES = ['subscriber', 'lead', 'opportunity', 'customer', 'loyal', 'churned'] as const;

export const SEGMENT_FIELDS = [
  'customer_type', 'lifecycle_stage', 'total_ltv', 'engagement_score', 'country', 'segments', 'last_order_date', 'subscription_status',
] as const;
export type SegmentField = (typeof SEGMENT_FIELDS)[number];

export const SEGMENT_OPERATORS = [
  'eq', 'neq', 'in', 'not_in', 'gt', 'gte', 'lt', 'lte', 'contains', 'not_contains', 'exists', 'within_last_days', 'not_within_last_days',
] as const;
export type SegmentOperator = (typeof SEGMENT_OPERATORS)[number];

/** What each field accepts: its operators and the kind of value they compare with. */
type ValueKind = 'enum' | 'number' | 'country' | 'tag' | 'date' | 'days' | 'boolean';
interface FieldSpec {
  operators: Partial<Record<SegmentOperator, ValueKind>>;
  values?: readonly string[];
  describe: string;
}

const enumOps = { eq: 'enum', neq: 'enum', in: 'enum', not_in: 'enum' } as const;
const numberOps = { eq: 'number', neq: 'number', gt: 'number', gte: 'number', lt: 'number', lte: 'number' } as const;

export const FIELD_SPECS: Record<SegmentField, FieldSpec> = {
  customer_type: { operators: { ...enumOps, exists: 'boolean' }, values: CUSTOMER_TYPES, describe: 'b2b, b2c or b2g' },
  lifecycle_stage: { operators: enumOps, values: LIFECYCLE_STAGE_VALUES, describe: 'the journey\'s lifecycle stage' },
  total_ltv: { operators: numberOps, describe: 'lifetime value, decimal major units (as in customer_metrics)' },
  engagement_score: { operators: numberOps, describe: '0–100' },
  country: { operators: { eq: 'country', neq: 'country', in: 'country', not_in: 'country', exists: 'boolean' }, describe: 'ISO 3166-1 alpha-2' },
  segments: { operators: { contains: 'tag', not_contains: 'tag', in: 'tag', not_in: 'tag', exists: 'boolean' }, describe: "the customer's segment tags" },
  last_order_date: {
    operators: { gt: 'date', gte: 'date', lt: 'date', lte: 'date', within_last_days: 'days', not_within_last_days: 'days', exists: 'boolean' },
    describe: 'when the latest order that is not canceled was placed',
  },
  subscription_status: { operators: { in: 'enum', not_in: 'enum', exists: 'boolean' }, values: SUBSCRIPTION_STATUSES, describe: 'statuses of the customer\'s subscriptions' },
};

export const MAX_DEPTH = 3;
export const MAX_CONDITIONS = 50;

export interface SegmentCondition {
  field: SegmentField;
  operator: SegmentOperator;
  value?: unknown;
}
export interface SegmentRuleGroup {
  match: 'all' | 'any';
  conditions: (SegmentCondition | SegmentRuleGroup)[];
}

const isGroup = (c: SegmentCondition | SegmentRuleGroup): c is SegmentRuleGroup => 'match' in c;

const DATE = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}:\d{2}))?$/;

function checkValue(kind: ValueKind, value: unknown, spec: FieldSpec, many: boolean): string | null {
  const one = (v: unknown): string | null => {
    switch (kind) {
      case 'enum': return typeof v === 'string' && spec.values!.includes(v) ? null : `expected one of ${spec.values!.join(', ')}`;
      case 'number': return typeof v === 'number' && Number.isFinite(v) && Math.abs(v) <= 1e12 ? null : 'expected a number (at most 1e12 in size)';
      case 'country': return typeof v === 'string' && /^[A-Za-z]{2}$/.test(v) ? null : 'expected an ISO 3166-1 alpha-2 country code such as DE';
      case 'tag': return typeof v === 'string' && v.trim().length > 0 && v.length <= 64 ? null : 'expected a segment tag (1–64 characters)';
      case 'date': {
        if (typeof v !== 'string' || !DATE.test(v) || Number.isNaN(Date.parse(v))) return 'expected a date (YYYY-MM-DD) or an ISO 8601 timestamp';
        const [y, m, d] = v.slice(0, 10).split('-').map(Number);
        const day = new Date(Date.UTC(y!, m! - 1, d!));
        return day.getUTCMonth() === m! - 1 && day.getUTCDate() === d! ? null : 'not a calendar date';
      }
      case 'days': return Number.isInteger(v) && (v as number) >= 0 && (v as number) <= 36_500 ? null : 'expected a whole number of days from 0 to 36500';
      case 'boolean': return typeof v === 'boolean' ? null : 'expected true or false';
    }
  };
  if (!many) return one(value);
  if (!Array.isArray(value) || value.length === 0 || value.length > 100) return 'expected a non-empty array (at most 100 values)';
  for (const v of value) {
    const bad = one(v);
    if (bad) return `${bad} in every element`;
  }
  return null;
}

const conditionSchema = z.strictObject({
  field: z.enum(SEGMENT_FIELDS),
  operator: z.enum(SEGMENT_OPERATORS),
  value: z.unknown().optional(),
}).superRefine((c, ctx) => {
  const spec = FIELD_SPECS[c.field];
  const kind = spec.operators[c.operator];
  if (!kind) {
    ctx.addIssue({ code: 'custom', path: ['operator'], message: `${c.field} (${spec.describe}) takes ${Object.keys(spec.operators).join(', ')}` });
    return;
  }
  if (c.operator === 'exists' && c.value === undefined) return; // exists: true by default
  const bad = checkValue(kind, c.value, spec, c.operator === 'in' || c.operator === 'not_in');
  if (bad) ctx.addIssue({ code: 'custom', path: ['value'], message: bad });
});

/** A rule group (zod, recursive): `{ match: 'all' | 'any', conditions: [condition | group, …] }`. */
export const ruleGroupSchema: z.ZodType<SegmentRuleGroup> = z.lazy(() => z.strictObject({
  match: z.enum(['all', 'any']).describe('all: every condition holds (and); any: at least one holds (or).'),
  conditions: z.array(z.union([conditionSchema, ruleGroupSchema], {
    error: `expected a condition { field, operator, value } whose field is one of ${SEGMENT_FIELDS.join(', ')}, or a group { match, conditions }`,
  })).min(1).max(MAX_CONDITIONS),
})).meta({ id: 'SegmentRuleGroup' }) as unknown as z.ZodType<SegmentRuleGroup>;

/** Depth and size limits, checked after parsing (recursion depth is not a zod concept). */
export function ruleLimitErrors(group: SegmentRuleGroup, path = 'rules'): { path: string; message: string }[] {
  let count = 0;
  const errors: { path: string; message: string }[] = [];
  const walk = (g: SegmentRuleGroup, depth: number, at: string) => {
    if (depth > MAX_DEPTH) {
      errors.push({ path: at, message: `groups nest at most ${MAX_DEPTH} levels deep` });
      return;
    }
    g.conditions.forEach((c, i) => (isGroup(c) ? walk(c, depth + 1, `${at}.conditions.${i}`) : count++));
  };
  walk(group, 1, path);
  if (count > MAX_CONDITIONS) errors.push({ path, message: `at most ${MAX_CONDITIONS} conditions in all` });
  return errors;
}

// ---- SQL -------------------------------------------------------------------------------------

/** A SQL fragment with its `?` parameters, in order. */
export interface Sql {
  text: string;
  params: unknown[];
}

const SCOPE = 'o.account_id = c.account_id and o.livemode = c.livemode and o.customer_id = c.id';
const LAST_ORDER = `(select max(o.created_at) from orders o where ${SCOPE} and o.status <> 'canceled')`;
const ORDER_COUNTRY = `(select upper(o.shipping_address->>'country') from orders o where ${SCOPE} order by o.id desc limit 1)`;
const COUNTRY = `coalesce(nullif(upper(c.custom_fields->>'country'), ''), ${ORDER_COUNTRY})`;
const SUBS = `(select 1 from subscriptions s where s.account_id = c.account_id and s.livemode = c.livemode and s.customer_id = c.id`;

const SCALAR: Partial<Record<SegmentField, string>> = {
  customer_type: 'c.customer_type',
  lifecycle_stage: `coalesce(m.lifecycle_stage, 'subscriber')`,
  total_ltv: 'coalesce(m.total_ltv, 0)',
  engagement_score: 'coalesce(m.engagement_score, 0)',
  country: COUNTRY,
  last_order_date: LAST_ORDER,
};

/** A list value, bound as one JSON parameter (the driver would spread a JS array into several). */
const LIST = 'array(select jsonb_array_elements_text(?::jsonb))';
const list = (v: unknown) => JSON.stringify(v);

const COMPARE: Partial<Record<SegmentOperator, string>> = { gt: '>', gte: '>=', lt: '<', lte: '<=' };

function conditionSql(c: SegmentCondition, now: Date): Sql {
  const v = c.value;
  const exists = v !== false;
  if (c.field === 'segments') {
    switch (c.operator) {
      case 'contains': return { text: '(? = any(c.segments))', params: [v] };
      case 'not_contains': return { text: '(not (? = any(c.segments)))', params: [v] };
      case 'in': return { text: `(c.segments && ${LIST})`, params: [list(v)] };
      case 'not_in': return { text: `(not (c.segments && ${LIST}))`, params: [list(v)] };
      default: return { text: exists ? '(cardinality(c.segments) > 0)' : '(cardinality(c.segments) = 0)', params: [] };
    }
  }
  if (c.field === 'subscription_status') {
    switch (c.operator) {
      case 'in': return { text: `exists ${SUBS} and s.status = any(${LIST}))`, params: [list(v)] };
      case 'not_in': return { text: `not exists ${SUBS} and s.status = any(${LIST}))`, params: [list(v)] };
      default: return { text: `${exists ? '' : 'not '}exists ${SUBS})`, params: [] };
    }
  }
  const expr = SCALAR[c.field]!;
  const cast = c.field === 'total_ltv' || c.field === 'engagement_score' ? '::numeric' : c.field === 'last_order_date' ? '::timestamptz' : '';
  const value = c.field === 'country' ? (Array.isArray(v) ? v.map((x) => String(x).toUpperCase()) : String(v).toUpperCase()) : v;
  switch (c.operator) {
    case 'eq': return { text: `(${expr} = ?${cast})`, params: [value] };
    case 'neq': return { text: `(${expr} is distinct from ?${cast})`, params: [value] };
    case 'in': return { text: `(${expr} = any(${LIST}))`, params: [list(value)] };
    case 'not_in': return { text: `(coalesce(${expr} <> all(${LIST}), true))`, params: [list(value)] };
    case 'exists': return { text: `(${expr} is ${exists ? 'not ' : ''}null)`, params: [] };
    case 'within_last_days': return { text: `(${expr} >= ?::timestamptz - make_interval(days => ?::int))`, params: [now.toISOString(), v] };
    case 'not_within_last_days': return { text: `(${expr} is null or ${expr} < ?::timestamptz - make_interval(days => ?::int))`, params: [now.toISOString(), v] };
    default: return { text: `(${expr} ${COMPARE[c.operator]} ?${cast})`, params: [value] };
  }
}

/** The rule as one SQL predicate over `customers c` left-joined with `crm_customer_metrics m`. */
export function ruleSql(group: SegmentRuleGroup, now: Date): Sql {
  const parts = group.conditions.map((c) => (isGroup(c) ? ruleSql(c, now) : conditionSql(c, now)));
  return {
    text: `(${parts.map((p) => p.text).join(group.match === 'all' ? ' and ' : ' or ')})`,
    params: parts.flatMap((p) => p.params),
  };
}

/** Whether the rule reads the metrics snapshot (so evaluation refreshes stale snapshots first). */
export function usesMetrics(group: SegmentRuleGroup): boolean {
  return group.conditions.some((c) => (isGroup(c) ? usesMetrics(c) : c.field === 'lifecycle_stage' || c.field === 'total_ltv' || c.field === 'engagement_score'));
}
