import type { Pool } from 'pg';
import type { Config } from '../../../platform/config.ts';
import { AdyenGateway } from './adyen.ts';
import { PayPalGateway } from './paypal.ts';
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
  adyen: AdyenGateway | null;
  paypal: PayPalGateway | null;
  /** Whether the gateway is configured on this server (the sandbox always is). */
  configured(name: GatewayName): boolean;
  /** Whether the gateway talks to its provider's test environment (no money moves), so test mode may route to it. */
  testEnvironment(name: GatewayName): boolean;
  /** Live mode's gateway for accounts without their own choice; null when none is configured. */
  liveDefault: GatewayName | null;
  /** Whether live mode may use the sandbox (PAYMENTS_LIVE_SANDBOX, development only). */
  liveSandboxAllowed: boolean;
  get(name: GatewayName): PaymentGateway;
}

export type PaymentGatewayConfig = Pick<Config,
  'PAYMENTS_LIVE_GATEWAY' | 'PAYMENTS_RISK_BLOCK_THRESHOLD' | 'SANDBOX_GATEWAY_SLOW_CARD_MS' | 'SANDBOX_GATEWAY_FEE_PERCENT'
  | 'SANDBOX_GATEWAY_FEE_FIXED' | 'STRIPE_API_KEY' | 'STRIPE_API_BASE'>
  & Partial<Pick<Config, 'ADYEN_API_KEY' | 'ADYEN_MERCHANT_ACCOUNT' | 'ADYEN_ENVIRONMENT' | 'ADYEN_LIVE_PREFIX' | 'ADYEN_CHECKOUT_BASE'
    | 'PAYPAL_CLIENT_ID' | 'PAYPAL_CLIENT_SECRET' | 'PAYPAL_ENVIRONMENT' | 'PAYPAL_API_BASE'>>
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
  const adyen = config.ADYEN_API_KEY && config.ADYEN_MERCHANT_ACCOUNT
    ? new AdyenGateway({
      apiKey: config.ADYEN_API_KEY, merchantAccount: config.ADYEN_MERCHANT_ACCOUNT, environment: config.ADYEN_ENVIRONMENT ?? 'TEST',
      liveEndpointUrlPrefix: config.ADYEN_LIVE_PREFIX, checkoutBase: config.ADYEN_CHECKOUT_BASE, fingerprintKey: config.CARD_FINGERPRINT_KEY ?? null,
    })
    : null;
  const paypal = config.PAYPAL_CLIENT_ID && config.PAYPAL_CLIENT_SECRET
    ? new PayPalGateway({
      clientId: config.PAYPAL_CLIENT_ID, clientSecret: config.PAYPAL_CLIENT_SECRET, environment: config.PAYPAL_ENVIRONMENT ?? 'sandbox',
      apiBase: config.PAYPAL_API_BASE, fingerprintKey: config.CARD_FINGERPRINT_KEY ?? null,
    })
    : null;
  const byName = { stripe, adyen, paypal };
  return {
    sandbox,
    stripe,
    adyen,
    paypal,
    configured: (name) => name === 'sandbox' || !!byName[name],
    testEnvironment: (name) => name === 'sandbox'
      || (name === 'stripe' && !!stripe && /^(sk|rk)_test_/.test(config.STRIPE_API_KEY ?? ''))
      || (name === 'adyen' && !!adyen && (config.ADYEN_ENVIRONMENT ?? 'TEST') === 'TEST')
      || (name === 'paypal' && !!paypal && (config.PAYPAL_ENVIRONMENT ?? 'sandbox') === 'sandbox'),
    liveDefault: config.PAYMENTS_LIVE_GATEWAY ?? (stripe ? 'stripe' : liveSandboxAllowed ? 'sandbox' : null),
    liveSandboxAllowed,
    get(name) {
      if (name === 'sandbox') return sandbox;
      const gateway = byName[name];
      if (!gateway) throw new GatewayRejectedError('gateway_not_configured', `The ${name} gateway is not configured on this server (see the README's payment settings).`);
      return gateway;
    },
  };
}

export * from './types.ts';
