import type { EntityManager } from '@mikro-orm/postgresql';
import { ApiError, notFound } from '../../platform/errors.ts';
import { scopeColumns, type Scope } from '../scope.ts';
import type { CardBrand, CardInput, CardOnFile } from './cards.ts';
import { PaymentRoutingRule } from './entities.ts';
import type { PaymentGateways } from './gateways/index.ts';
import { GatewayUnavailableError, type GatewayName } from './gateways/types.ts';
import type { PaymentRouting, RoutingConditions, RoutingRuleView } from './schemas.ts';

/**
 * Gateway routing per account and mode: rules, tried in priority order (then creation order),
 * choose the gateways of a payment by currency, amount or card brand. The first rule whose
 * conditions all hold gives an ordered list of gateways; the first usable one is chosen and the
 * rest are its failover. A gateway is usable when it is configured on this server and, in test
 * mode, talks to its provider's test environment (the sandbox, Stripe with a test key, Adyen TEST,
 * PayPal sandbox) — test mode never reaches a live provider. No matching rule: test mode uses the
 * sandbox, live mode the account's chosen gateway or the server default (as before routing).
 *
 * Failover happens only before a charge is attempted: the card is tokenized with the chosen
 * gateway, and when that gateway is down (unreachable, 429, 5xx) the next one is tried. Once a
 * token exists the charge goes to that gateway alone; a charge whose outcome is unknown is retried
 * there with the same idempotency key (the payment stays `processing` until the gateway answers —
 * reconciliation), never sent to another gateway, so a card is never charged twice.
 */

export interface RoutingFacts {
  currency: string;
  amount: number;
  brand: CardBrand;
}

export interface RoutingDecision {
  candidates: GatewayName[];
  ruleId: string | null;
  reason: string;
}

export function ruleView(r: PaymentRoutingRule): RoutingRuleView {
  return {
    id: r.id, object: 'routing_rule', livemode: r.livemode, name: r.name, priority: r.priority, conditions: r.conditions, gateways: r.gateways,
    enabled: r.enabled, created_at: r.createdAt.toISOString(), updated_at: r.updatedAt.toISOString(),
  };
}

export interface RoutingRuleInput {
  name: string;
  priority: number;
  conditions: RoutingConditions;
  gateways: GatewayName[];
  enabled: boolean;
}

export async function createRoutingRule(em: EntityManager, scope: Scope, id: string, input: RoutingRuleInput): Promise<RoutingRuleView> {
  const existing = await em.findOne(PaymentRoutingRule, { id });
  if (existing) return ruleView(existing);
  const now = new Date();
  const rule = em.create(PaymentRoutingRule, { id, ...scopeColumns(scope), ...input, createdAt: now, updatedAt: now });
  await em.flush();
  return ruleView(rule);
}

async function findRule(em: EntityManager, id: string): Promise<PaymentRoutingRule> {
  const rule = await em.findOne(PaymentRoutingRule, { id });
  if (!rule) throw notFound('routing rule', id);
  return rule;
}

export async function getRoutingRule(em: EntityManager, id: string): Promise<RoutingRuleView> {
  return ruleView(await findRule(em, id));
}

export async function updateRoutingRule(em: EntityManager, id: string, patch: Partial<RoutingRuleInput>): Promise<RoutingRuleView> {
  const rule = await findRule(em, id);
  if (patch.name !== undefined) rule.name = patch.name;
  if (patch.priority !== undefined) rule.priority = patch.priority;
  if (patch.conditions !== undefined) rule.conditions = patch.conditions;
  if (patch.gateways !== undefined) rule.gateways = patch.gateways;
  if (patch.enabled !== undefined) rule.enabled = patch.enabled;
  rule.updatedAt = new Date();
  await em.flush();
  return ruleView(rule);
}

export async function listRoutingRules(
  em: EntityManager, page: { where: Record<string, unknown>; direction: 'asc' | 'desc'; limit: number },
): Promise<RoutingRuleView[]> {
  return (await em.find(PaymentRoutingRule, page.where, { orderBy: { id: page.direction }, limit: page.limit + 1 })).map(ruleView);
}

export function conditionsHold(c: RoutingConditions, facts: RoutingFacts): boolean {
  if (c.currencies && !c.currencies.includes(facts.currency.toUpperCase())) return false;
  if (c.amount_gte !== undefined && facts.amount < c.amount_gte) return false;
  if (c.amount_lte !== undefined && facts.amount > c.amount_lte) return false;
  if (c.card_brands && !c.card_brands.includes(facts.brand)) return false;
  return true;
}

function describe(c: RoutingConditions): string {
  const parts = [
    c.currencies ? `currency in ${c.currencies.join(', ')}` : null,
    c.amount_gte !== undefined ? `amount ≥ ${c.amount_gte}` : null,
    c.amount_lte !== undefined ? `amount ≤ ${c.amount_lte}` : null,
    c.card_brands ? `card brand in ${c.card_brands.join(', ')}` : null,
  ].filter(Boolean);
  return parts.length ? parts.join(' and ') : 'every payment';
}

/** The gateways to try for a payment, in order, and why. Null candidates list: the default applies. */
export async function routePayment(
  em: EntityManager, gateways: PaymentGateways, scope: Scope, facts: RoutingFacts,
): Promise<RoutingDecision | null> {
  const rules = await em.find(PaymentRoutingRule, { enabled: true }, { orderBy: { priority: 'asc', id: 'asc' } });
  const usable = (g: GatewayName) => gateways.configured(g) && (scope.livemode ? g !== 'sandbox' || gateways.liveSandboxAllowed : gateways.testEnvironment(g));
  for (const rule of rules) {
    if (!conditionsHold(rule.conditions, facts)) continue;
    const named = rule.gateways as GatewayName[];
    const candidates = named.filter(usable);
    if (!candidates.length) continue;
    const skipped = named.filter((g) => !candidates.includes(g));
    return {
      candidates, ruleId: rule.id,
      reason: `rule "${rule.name}" (${describe(rule.conditions)})${skipped.length ? `; skipped ${skipped.join(', ')} (not usable in ${scope.livemode ? 'live' : 'test'} mode on this server)` : ''}`,
    };
  }
  return null;
}

/**
 * Tokenizes the card with the first candidate that is up; a gateway that is down (before any
 * charge) is recorded and the next one tried. Other failures (a declined or invalid card) are not
 * a reason to fail over: they are thrown as they are.
 */
export async function tokenizeWithFailover(
  gateways: PaymentGateways, decision: RoutingDecision, card: CardInput,
): Promise<{ gateway: GatewayName; onFile: CardOnFile; routing: PaymentRouting }> {
  const failedOver: { gateway: string; message: string }[] = [];
  for (const gateway of decision.candidates) {
    try {
      const onFile = await gateways.get(gateway).tokenizeCard(card);
      const reason = failedOver.length ? `${decision.reason}; failed over to ${gateway}` : decision.reason;
      return { gateway, onFile, routing: { rule_id: decision.ruleId, reason, failed_over: failedOver } };
    } catch (err) {
      if (!(err instanceof GatewayUnavailableError)) throw err;
      failedOver.push({ gateway, message: err.message.slice(0, 300) });
    }
  }
  throw new ApiError({
    status: 503, code: 'service_unavailable', title: 'Service Unavailable',
    detail: `Every gateway the routing chose is unreachable right now (${decision.candidates.join(', ')}); no payment was made.`,
    suggestion: 'Retry after 5 seconds with the same Idempotency-Key.', headers: { 'Retry-After': '5' },
  });
}
