import { z } from 'zod';
import { GATEWAY_NAMES } from '../../../domain/payments/gateways/types.ts';
import { createRoutingRule, listRoutingRules, readRoutingRule, updateRoutingRule } from '../../../domain/payments/routing.ts';
import { routingConditionsSchema, routingRuleSchema } from '../../../domain/payments/schemas.ts';
import { listRoute } from '../../http/pagination.ts';
import { getRoute, route } from '../../http/route.ts';

const ruleParams = z.strictObject({ routing_rule_id: z.string().min(1).max(64) });
const gateways = z.array(z.enum(GATEWAY_NAMES)).min(1).max(GATEWAY_NAMES.length)
  .refine((g) => new Set(g).size === g.length, 'name each gateway once')
  .describe('In order of preference: the first usable one is chosen, the next ones are its failover (before any charge).');
const amountRange = (c: { amount_gte?: number | undefined; amount_lte?: number | undefined }) => c.amount_gte === undefined || c.amount_lte === undefined || c.amount_gte <= c.amount_lte;

/** Gateway routing rules (domain/payments/routing.ts). */
export const routingRoutes = [
  route({
    method: 'post', path: '/v3/payments/routing_rules', operationId: 'createRoutingRule', tag: 'Payments',
    summary: 'Create a gateway routing rule: by currency, amount or card brand, with failover gateways', permission: 'payments:write', status: 201,
    body: z.strictObject({
      name: z.string().trim().min(1).max(200),
      priority: z.number().int().min(0).max(10_000).default(100).describe('Lower first; ties in creation order.'),
      conditions: routingConditionsSchema.refine(amountRange, { path: ['amount_lte'], message: 'must be at least amount_gte' }).default({}),
      gateways,
      enabled: z.boolean().default(true),
    }),
    response: routingRuleSchema,
    async handler({ em, auth, body, resourceId }) {
      const rule = await createRoutingRule(em(), auth, await resourceId('routingRule'), body);
      return { body: rule, headers: { Location: `/v3/payments/routing_rules/${rule.id}` } };
    },
  }),
  listRoute({
    path: '/v3/payments/routing_rules', operationId: 'listRoutingRules', tag: 'Payments', summary: 'List gateway routing rules',
    permission: 'payments:read', item: routingRuleSchema,
    list: ({ em }, page) => listRoutingRules(em(), page),
  }),
  getRoute({
    path: '/v3/payments/routing_rules/{routing_rule_id}', operationId: 'getRoutingRule', tag: 'Payments', summary: 'Retrieve a gateway routing rule',
    permission: 'payments:read', readOnly: true, params: ruleParams, response: routingRuleSchema,
    get: ({ deps, auth, params }) => readRoutingRule(deps.orm, auth, params.routing_rule_id),
  }),
  route({
    method: 'patch', path: '/v3/payments/routing_rules/{routing_rule_id}', operationId: 'updateRoutingRule', tag: 'Payments',
    summary: 'Change, enable or disable a gateway routing rule', permission: 'payments:write', status: 200, params: ruleParams,
    body: z.strictObject({
      name: z.string().trim().min(1).max(200).optional(), priority: z.number().int().min(0).max(10_000).optional(),
      conditions: routingConditionsSchema.refine(amountRange, { path: ['amount_lte'], message: 'must be at least amount_gte' }).optional(),
      gateways: gateways.optional(), enabled: z.boolean().optional(),
    }),
    response: routingRuleSchema,
    async handler({ em, params, body }) {
      return { body: await updateRoutingRule(em(), params.routing_rule_id, body) };
    },
  }),
];
