import type { Pool } from 'pg';
import type { Config } from '../../../platform/config.ts';
import { SandboxGateway } from './sandbox.ts';
import { StripeGateway } from './stripe.ts';
import { GatewayRejectedError, type GatewayName, type PaymentGateway } from './types.ts';

/**
 * The gateways this process can use, built once at start from the configuration. Test mode always
 * uses the sandbox; live mode uses the account's choice (`payment_gateway_settings`), else
 * PAYMENTS_LIVE_GATEWAY, else Stripe when STRIPE_API_KEY is set, else none: live payments are then
 * refused (503 `gateway_not_configured`), never sent to the sandbox. The sandbox serves live mode
 * only with PAYMENTS_LIVE_SANDBOX=true (development).
 */
export interface PaymentGateways {
  sandbox: SandboxGateway;
  stripe: StripeGateway | null;
  /** Live mode's gateway for accounts without their own choice; null when none is configured. */
  liveDefault: GatewayName | null;
  /** Whether live mode may use the sandbox (PAYMENTS_LIVE_SANDBOX, development only). */
  liveSandboxAllowed: boolean;
  get(name: GatewayName): PaymentGateway;
}

export type PaymentGatewayConfig = Pick<Config,
  'PAYMENTS_LIVE_GATEWAY' | 'PAYMENTS_RISK_BLOCK_THRESHOLD' | 'SANDBOX_GATEWAY_SLOW_CARD_MS' | 'SANDBOX_GATEWAY_FEE_PERCENT'
  | 'SANDBOX_GATEWAY_FEE_FIXED' | 'STRIPE_API_KEY' | 'STRIPE_API_BASE'>
  & Partial<Pick<Config, 'PAYMENTS_LIVE_SANDBOX' | 'CARD_FINGERPRINT_KEY'>>;

export function createPaymentGateways(config: PaymentGatewayConfig, pool: () => Promise<Pool>): PaymentGateways {
  let cached: Promise<Pool> | undefined;
  const sandbox = new SandboxGateway(() => (cached ??= pool()), {
    feePercent: config.SANDBOX_GATEWAY_FEE_PERCENT,
    feeFixed: config.SANDBOX_GATEWAY_FEE_FIXED,
    slowCardMs: config.SANDBOX_GATEWAY_SLOW_CARD_MS,
    riskBlockThreshold: config.PAYMENTS_RISK_BLOCK_THRESHOLD,
    fingerprintKey: config.CARD_FINGERPRINT_KEY ?? null,
  });
  const liveSandboxAllowed = config.PAYMENTS_LIVE_SANDBOX ?? false;
  const stripe = config.STRIPE_API_KEY ? new StripeGateway({ apiKey: config.STRIPE_API_KEY, apiBase: config.STRIPE_API_BASE }) : null;
  return {
    sandbox,
    stripe,
    liveDefault: config.PAYMENTS_LIVE_GATEWAY ?? (stripe ? 'stripe' : liveSandboxAllowed ? 'sandbox' : null),
    liveSandboxAllowed,
    get(name) {
      if (name === 'sandbox') return sandbox;
      if (!stripe) throw new GatewayRejectedError('gateway_not_configured', 'The stripe gateway is not configured on this server (set STRIPE_API_KEY).');
      return stripe;
    },
  };
}

export * from './types.ts';
