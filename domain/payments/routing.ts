import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { ApiError, notFound } from '../../platform/errors.ts';
import { readScopedOr404, scopeColumns, type Scope } from '../scope.ts';
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
  /** Null when no card pays (a marketplace split funded by the platform balance): a card_brands condition then does not hold. */
  brand: CardBrand | null;
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

/** Routing rule by id for GET /v3/payments/routing_rules/{id}: one prepared statement, no EntityManager (readScopedOr404). */
export async function readRoutingRule(orm: MikroORM, scope: Scope, id: string): Promise<RoutingRuleView> {
  return ruleView(await readScopedOr404(orm, scope, PaymentRoutingRule, id, 'routing rule'));
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
  if (c.card_brands && (facts.brand === null || !c.card_brands.includes(facts.brand))) return false;
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

/** Why a gateway cannot take this payment (null: it can), e.g. `transfers_not_supported` for a split. */
export type GatewayFilter = (gateway: GatewayName) => string | null;

/** What routing found: the decision of the first rule that has a gateway for the payment, and the matching rules passed over first. */
export interface RoutingMatch {
  decision: RoutingDecision | null;
  /** Matching rules with no gateway for this payment, each with why (`rule "EUR" (adyen: transfers_not_supported)`). */
  passedOver: string[];
}

/** Whether the gateway may serve this mode here (see the module comment); the reason when not. */
export function unusableReason(gateways: PaymentGateways, scope: Scope, g: GatewayName): string | null {
  const usable = gateways.configured(g) && (scope.livemode ? g !== 'sandbox' || gateways.liveSandboxAllowed : gateways.testEnvironment(g));
  return usable ? null : `not usable in ${scope.livemode ? 'live' : 'test'} mode on this server`;
}

/**
 * The first enabled rule (by priority) whose conditions hold and that names a gateway able to take
 * the payment (usable here and passing `filter`): its able gateways, in its order, are the
 * candidates. A matching rule with none is passed over (and said so), as a rule naming only
 * unconfigured gateways always was.
 */
export async function matchRules(
  em: EntityManager, gateways: PaymentGateways, scope: Scope, facts: RoutingFacts, filter: GatewayFilter = () => null,
): Promise<RoutingMatch> {
  const rules = await em.find(PaymentRoutingRule, { enabled: true }, { orderBy: { priority: 'asc', id: 'asc' } });
  const passedOver: string[] = [];
  for (const rule of rules) {
    if (!conditionsHold(rule.conditions, facts)) continue;
    const candidates: GatewayName[] = [];
    const skipped: string[] = [];
    for (const g of rule.gateways as GatewayName[]) {
      const why = unusableReason(gateways, scope, g) ?? filter(g);
      if (why) skipped.push(`${g}: ${why}`);
      else candidates.push(g);
    }
    if (!candidates.length) {
      passedOver.push(`rule "${rule.name}" (${skipped.join('; ')})`);
      continue;
    }
    const reason = [
      `rule "${rule.name}" (${describe(rule.conditions)})`,
      ...(skipped.length ? [`skipped ${skipped.join(', ')}`] : []),
      ...(passedOver.length ? [`passed over ${passedOver.join(', ')}`] : []),
    ].join('; ');
    return { decision: { candidates, ruleId: rule.id, reason }, passedOver };
  }
  return { decision: null, passedOver };
}

/** The gateways to try for a plain card payment, in order, and why. Null: no rule matched, the default applies. */
export async function routePayment(
  em: EntityManager, gateways: PaymentGateways, scope: Scope, facts: RoutingFacts,
): Promise<RoutingDecision | null> {
  return (await matchRules(em, gateways, scope, facts)).decision;
}

/** A card tokenized where routing chose: the gateway (its token is valid there only), the token, and how it was chosen. */
export interface RoutedCard {
  gateway: GatewayName;
  onFile: CardOnFile;
  routing: PaymentRouting;
}

/**
 * How a saved card's charge is routed: to the gateway that tokenised it, always — a card token is
 * valid at its own gateway only, and no card number is kept to tokenize it elsewhere, so a rule
 * can move a saved card's charges only if it names that gateway too (then the rule is credited).
 * A matching rule that names only other gateways is reported, not followed: the card reaches
 * the rule's gateway when it is saved again (a new payment method is tokenised under the rules).
 * No failover either: another gateway could not charge the token, and a charge whose outcome is
 * unknown waits at its gateway (reconciliation).
 */
export async function savedCardRouting(
  em: EntityManager, gateways: PaymentGateways, scope: Scope, facts: RoutingFacts, cardGateway: GatewayName, filter?: GatewayFilter,
): Promise<PaymentRouting> {
  const own = `the saved card's gateway: ${cardGateway} tokenised it, and a card token is valid at its own gateway only`;
  const { decision } = await matchRules(em, gateways, scope, facts, filter);
  if (!decision) return { rule_id: null, reason: `${own} (no routing rule matched)`, failed_over: [] };
  if (decision.candidates.includes(cardGateway)) return { rule_id: decision.ruleId, reason: `${decision.reason}; ${own}`, failed_over: [] };
  return {
    rule_id: null,
    reason: `${own}; ${decision.reason} prefers ${decision.candidates.join(', ')}, which cannot charge this card (a new payment method is tokenised under the rules)`,
    failed_over: [],
  };
}

/**
 * Tokenizes the card with the first candidate that is up; a gateway that is down (before any
 * charge) is recorded and the next one tried. Other failures (a declined or invalid card) are not
 * a reason to fail over: they are thrown as they are.
 */
export async function tokenizeWithFailover(gateways: PaymentGateways, decision: RoutingDecision, card: CardInput): Promise<RoutedCard> {
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
