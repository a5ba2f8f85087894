import type Stripe from 'stripe';
import { cardBrand, fullExpiryYear, type CardBrand, type CardInput, type CardOnFile } from '../cards.ts';
import {
  CardRejectedError, GatewayRejectedError, GatewayUnavailableError,
  type BalanceRequest, type ChargeRequest, type ChargeResult, type PaymentGateway, type RefundRequest, type ReversalRequest, type TransferRequest, type TransferResult,
} from './types.ts';
import { fromStripeAmount, toStripeAmount } from './stripe-amounts.ts';

/**
 * The Stripe adapter (official `stripe` SDK): cards are tokenized as PaymentMethods, charges are
 * PaymentIntents confirmed at once, and every money-moving call carries our idempotency key.
 * Errors are mapped without their request parameters, so no card data reaches a log. Every amount
 * sent to or read from Stripe goes through `toStripeAmount` / `fromStripeAmount` (stripe-amounts.ts):
 * an amount Stripe would refuse is a 422 before any call.
 */
export interface StripeOptions {
  apiKey: string;
  /** Another API base, e.g. stripe-mock's `http://127.0.0.1:12111`. */
  apiBase?: string;
  timeoutMs?: number;
}

const BRANDS: Record<string, CardBrand> = {
  visa: 'visa', mastercard: 'mastercard', amex: 'amex', discover: 'discover', diners: 'diners', jcb: 'jcb', unionpay: 'unionpay',
};

/**
 * The SDK, loaded on first use (as the Adyen and PayPal adapters do): its few hundred modules were
 * loaded by every process that imports the gateways (the API, the workers, the CLI), Stripe
 * configured or not.
 */
let Sdk: typeof Stripe | undefined;
let loading: Promise<typeof Stripe> | undefined;
const loadSdk = () => (loading ??= import('stripe').then((loaded) => (Sdk = loaded.default)));

type ResponseListener = (e: { method: string; path: string; status: number; idempotencyKey: string | null }) => void;

export class StripeGateway implements PaymentGateway {
  readonly name = 'stripe' as const;
  private readonly opts: StripeOptions;
  private client: Promise<Stripe> | undefined;
  private readonly listeners: ResponseListener[] = [];

  constructor(opts: StripeOptions) {
    this.opts = opts;
  }

  /** The SDK's client, made on the first call. */
  private api(): Promise<Stripe> {
    return (this.client ??= loadSdk().then((StripeSdk) => {
      const base = this.opts.apiBase ? new URL(this.opts.apiBase) : null;
      const client = new StripeSdk(this.opts.apiKey, {
        maxNetworkRetries: 0, // the workflow retries, with the same idempotency key
        timeout: this.opts.timeoutMs ?? 20_000,
        ...(base ? {
          host: base.hostname,
          port: base.port || (base.protocol === 'https:' ? 443 : 80),
          protocol: base.protocol === 'http:' ? 'http' as const : 'https' as const,
        } : {}),
      });
      client.on('response', (e: Stripe.ResponseEvent) => {
        for (const listener of this.listeners) listener({ method: e.method, path: e.path, status: e.status, idempotencyKey: e.idempotency_key ?? null });
      });
      return client;
    }));
  }

  /** Every answered Stripe call (method, path, status, idempotency key): for monitoring and tests. */
  onResponse(listener: ResponseListener): void {
    this.listeners.push(listener);
  }

  async tokenizeCard(card: CardInput): Promise<CardOnFile> {
    try {
      const pm = await (await this.api()).paymentMethods.create({
        type: 'card',
        card: { number: card.number.replace(/[\s-]/g, ''), exp_month: card.exp_month, exp_year: fullExpiryYear(card.exp_year), cvc: card.cvc },
      });
      const c = pm.card;
      return {
        token: pm.id,
        brand: (c?.brand && BRANDS[c.brand]) || cardBrand(card.number),
        last4: c?.last4 ?? card.number.slice(-4),
        expMonth: c?.exp_month ?? card.exp_month,
        expYear: c?.exp_year ?? fullExpiryYear(card.exp_year),
        fingerprint: c?.fingerprint ?? '',
      };
    } catch (err) {
      if (Sdk && err instanceof Sdk.errors.StripeCardError) {
        const field = err.param?.includes('cvc') ? 'cvc' : err.param?.includes('exp') ? 'exp_year' : err.param?.includes('number') ? 'number' : null;
        throw new CardRejectedError(err.decline_code ?? err.code ?? 'generic_decline', err.message, field);
      }
      throw mapError(err);
    }
  }

  async charge(req: ChargeRequest): Promise<ChargeResult> {
    const amount = toStripeAmount(req.currency, req.amount);
    let intent: Stripe.PaymentIntent;
    try {
      intent = await (await this.api()).paymentIntents.create({
        amount,
        currency: req.currency.toLowerCase(),
        payment_method: req.card.token,
        automatic_payment_methods: { enabled: true, allow_redirects: 'never' },
        confirm: true,
        description: req.description ?? undefined,
        metadata: { payment_id: req.paymentId, ...(req.customerId ? { customer_id: req.customerId } : {}) },
        expand: ['latest_charge.balance_transaction'],
      }, { idempotencyKey: req.idempotencyKey });
    } catch (err) {
      if (Sdk && err instanceof Sdk.errors.StripeCardError) {
        return { outcome: 'declined', reference: err.payment_intent?.id ?? null, declineCode: err.decline_code ?? err.code ?? 'generic_decline', message: err.message, riskScore: null };
      }
      throw mapError(err);
    }
    for (let i = 0; intent.status === 'processing' && i < 10; i++) {
      await new Promise((r) => setTimeout(r, 1000));
      intent = await (await this.api()).paymentIntents.retrieve(intent.id, { expand: ['latest_charge.balance_transaction'] }).catch((err: unknown) => {
        throw mapError(err);
      });
    }
    const charge = typeof intent.latest_charge === 'object' ? intent.latest_charge : null;
    const riskScore = charge?.outcome?.risk_score ?? null;
    switch (intent.status) {
      case 'succeeded': {
        const bt = charge && typeof charge.balance_transaction === 'object' ? charge.balance_transaction : null;
        return {
          outcome: 'succeeded', reference: intent.id, chargeReference: charge?.id ?? null, riskScore,
          fees: bt ? fromStripeAmount(bt.currency, bt.fee) : null,
          settlementDate: bt?.available_on ? new Date(bt.available_on * 1000).toISOString().slice(0, 10) : null,
        };
      }
      case 'processing':
        throw new GatewayUnavailableError('Stripe is still processing the payment; checking again later.');
      case 'requires_action':
        return { outcome: 'declined', reference: intent.id, declineCode: 'authentication_required', message: 'The card requires authentication.', riskScore };
      default: {
        const error = intent.last_payment_error;
        return {
          outcome: 'declined', reference: intent.id, riskScore,
          declineCode: error?.decline_code ?? error?.code ?? 'generic_decline',
          message: error?.message ?? `The payment intent ended in status ${intent.status}.`,
        };
      }
    }
  }

  async refund(req: RefundRequest): Promise<{ reference: string }> {
    const amount = toStripeAmount(req.currency, req.amount);
    try {
      const refund = await (await this.api()).refunds.create({ payment_intent: req.chargeReference, amount }, { idempotencyKey: req.idempotencyKey });
      return { reference: refund.id };
    } catch (err) {
      throw mapError(err);
    }
  }

  /**
   * A transfer to a connected account ("separate charges and transfers"). A card-funded split's
   * transfers name their charge (`source_transaction: ch_…`), so they can go before the charge's
   * funds are available. Without it (chargeReference null: a split funded by the platform balance;
   * or a payment recorded before the charge id was kept, whose reference is the PaymentIntent)
   * Stripe pays it out of the available balance and refuses it (`balance_insufficient`) when short.
   */
  async transfer(req: TransferRequest): Promise<TransferResult> {
    const amount = toStripeAmount(req.currency, req.amount);
    try {
      const transfer = await (await this.api()).transfers.create({
        amount, currency: req.currency.toLowerCase(), destination: req.destination, transfer_group: req.group,
        ...(req.chargeReference?.startsWith('ch_') ? { source_transaction: req.chargeReference } : {}),
      }, { idempotencyKey: req.idempotencyKey });
      return { outcome: 'paid', reference: transfer.id };
    } catch (err) {
      const mapped = mapError(err);
      if (mapped instanceof GatewayRejectedError) return { outcome: 'failed', code: mapped.code, message: mapped.message };
      throw mapped;
    }
  }

  /** The platform's available balance in the currency (GET /v1/balance); none listed is 0. */
  async balance(req: BalanceRequest): Promise<{ available: number }> {
    try {
      const balance = await (await this.api()).balance.retrieve();
      const entry = balance.available.find((b) => b.currency.toLowerCase() === req.currency.toLowerCase());
      return { available: entry ? fromStripeAmount(req.currency, entry.amount) : 0 };
    } catch (err) {
      throw mapError(err);
    }
  }

  async reverseTransfer(req: ReversalRequest): Promise<{ reference: string }> {
    const amount = toStripeAmount(req.currency, req.amount);
    try {
      const reversal = await (await this.api()).transfers.createReversal(req.transferReference, { amount }, { idempotencyKey: req.idempotencyKey });
      return { reference: reversal.id };
    } catch (err) {
      throw mapError(err);
    }
  }
}

/** Stripe's errors as ours, keeping only the code and message (never the request parameters). */
function mapError(err: unknown): Error {
  if (Sdk && err instanceof Sdk.errors.StripeError) {
    const retryable = err instanceof Sdk.errors.StripeConnectionError || err instanceof Sdk.errors.StripeAPIError
      || err instanceof Sdk.errors.StripeRateLimitError || (err.statusCode ?? 0) >= 500 || err.statusCode === 409;
    if (retryable) return new GatewayUnavailableError(`Stripe: ${err.message}`);
    return new GatewayRejectedError(err.code ?? err.type, `Stripe: ${err.message}`);
  }
  return new GatewayUnavailableError(`Stripe: ${(err as Error)?.message ?? 'unknown error'}`);
}
