import { createHmac, randomBytes } from 'node:crypto';
import type { CheckoutAPI, Config } from '@adyen/api-library';
import type * as Sdk from '@adyen/api-library';
import { cardBrand, fullExpiryYear, normalizeCardNumber, type CardBrand, type CardInput, type CardOnFile } from '../cards.ts';
import {
  CardRejectedError, GatewayRejectedError, GatewayUnavailableError,
  type ChargeRequest, type ChargeResult, type PaymentGateway, type RefundRequest, type ReversalRequest, type TransferRequest, type TransferResult, type BalanceRequest,
} from './types.ts';

/**
 * The Adyen adapter (official `@adyen/api-library`, Checkout API v72). A card is tokenized once
 * with a zero-value authorisation that stores it (`storePaymentMethod`, `recurringProcessingModel:
 * CardOnFile`); every charge then sends only the stored payment method id and the shopper
 * reference (`shopperInteraction: ContAuth`), with our idempotency key as Adyen's
 * `Idempotency-Key`. Result codes map as: Authorised → succeeded; Refused/Cancelled/Error →
 * declined (refusal reason as the code); RedirectShopper/IdentifyShopper/ChallengeShopper (3-D
 * Secure) → declined `authentication_required` (a merchant-initiated charge cannot redirect);
 * Pending/Received → unavailable (asked again with the same key). HTTP 429 and 5xx are
 * GatewayUnavailableError (retried with the same key); other 4xx GatewayRejectedError. Errors keep
 * Adyen's code and message, never the request. Marketplace transfers are not offered through
 * this adapter (Adyen for Platforms is another product): they fail as `transfers_not_supported`.
 *
 * `checkoutBase` points the SDK at another host (a local double in tests) through the SDK's
 * pluggable HTTP client; without it the SDK's own client and Adyen's test or live endpoints are used.
 */
export interface AdyenOptions {
  apiKey: string;
  merchantAccount: string;
  environment: 'TEST' | 'LIVE';
  /** The live endpoint prefix Adyen assigns to a merchant (LIVE only). */
  liveEndpointUrlPrefix?: string;
  /** Another Checkout host, e.g. `http://127.0.0.1:4010` (tests). */
  checkoutBase?: string;
  timeoutMs?: number;
  /** Key of the card fingerprint (HMAC of the number); Adyen's response carries none. */
  fingerprintKey?: string | null;
  /** Required by the Checkout API's model; merchant-initiated charges of stored cards never redirect to it. */
  returnUrl?: string;
}

/**
 * The SDK, loaded on first use: it takes about a second to import, which every process that
 * imports the gateways (the API, the workers, the CLI) paid at start even when Adyen is not configured.
 */
let sdk: typeof Sdk | undefined;
let loading: Promise<typeof Sdk> | undefined;
const loadSdk = () => (loading ??= import('@adyen/api-library').then((loaded) => (sdk = loaded)));

const BRANDS: Record<string, CardBrand> = {
  visa: 'visa', mc: 'mastercard', mastercard: 'mastercard', amex: 'amex', discover: 'discover', diners: 'diners', jcb: 'jcb', cup: 'unionpay',
};

/** The SDK's HTTP client interface, over fetch, to a base other than Adyen's hosts. */
class RebasedHttpClient {
  private readonly base: string;
  private readonly timeoutMs: number;
  constructor(base: string, timeoutMs: number) {
    this.base = base;
    this.timeoutMs = timeoutMs;
  }

  async request(endpoint: string, json: string | Buffer, config: Config, _isApiKeyRequired: boolean, options: { headers?: Record<string, string>; idempotencyKey?: string; method?: string; params?: Record<string, string> } = {}): Promise<string> {
    const url = new URL(endpoint);
    const target = new URL(url.pathname + url.search, this.base);
    if (options.params) for (const [k, v] of Object.entries(options.params)) target.searchParams.set(k, v);
    const headers: Record<string, string> = { 'Content-Type': 'application/json', ...options.headers };
    if (config.apiKey) headers['X-API-Key'] = config.apiKey;
    if (options.idempotencyKey) headers['Idempotency-Key'] = options.idempotencyKey;
    const res = await fetch(target, {
      method: options.method ?? 'POST', headers, body: options.method === 'GET' ? undefined : String(json), signal: AbortSignal.timeout(this.timeoutMs),
    });
    const body = await res.text();
    if (res.status < 200 || res.status >= 300) {
      let apiError: { status?: number; errorCode?: string; message?: string } | undefined;
      try {
        apiError = JSON.parse(body);
      } catch {
        apiError = undefined;
      }
      const { HttpClientException } = await loadSdk();
      throw new HttpClientException({
        message: `HTTP Exception: ${res.status}. ${apiError?.message ?? res.statusText}`, statusCode: res.status, errorCode: apiError?.errorCode,
        responseHeaders: Object.fromEntries(res.headers) as never, responseBody: body, apiError: apiError as never,
      });
    }
    return body;
  }
}

export class AdyenGateway implements PaymentGateway {
  readonly name = 'adyen' as const;
  private readonly opts: AdyenOptions;
  private checkoutApi: Promise<CheckoutAPI> | undefined;

  constructor(opts: AdyenOptions) {
    this.opts = opts;
  }

  private checkout(): Promise<CheckoutAPI> {
    return (this.checkoutApi ??= loadSdk().then(({ CheckoutAPI, Client, EnvironmentEnum }) => {
      const { opts } = this;
      const client = new Client({
        apiKey: opts.apiKey, environment: opts.environment === 'LIVE' ? EnvironmentEnum.LIVE : EnvironmentEnum.TEST,
        liveEndpointUrlPrefix: opts.liveEndpointUrlPrefix, connectionTimeoutMillis: opts.timeoutMs ?? 20_000,
      });
      if (opts.checkoutBase) client.httpClient = new RebasedHttpClient(opts.checkoutBase, opts.timeoutMs ?? 20_000);
      return new CheckoutAPI(client);
    }));
  }

  private get returnUrl(): string {
    return this.opts.returnUrl ?? 'https://localhost/payments/adyen/return';
  }

  private fingerprint(number: string): string {
    return createHmac('sha256', this.opts.fingerprintKey ?? 'adyen').update(normalizeCardNumber(number)).digest('hex').slice(0, 32);
  }

  async tokenizeCard(card: CardInput): Promise<CardOnFile> {
    const shopperReference = `bp_${randomBytes(12).toString('hex')}`;
    const number = normalizeCardNumber(card.number);
    let res;
    try {
      res = await (await this.checkout()).PaymentsApi.payments({
        amount: { currency: 'EUR', value: 0 }, reference: `tokenize-${shopperReference}`, merchantAccount: this.opts.merchantAccount,
        paymentMethod: { type: 'scheme', number, expiryMonth: String(card.exp_month).padStart(2, '0'), expiryYear: String(fullExpiryYear(card.exp_year)), cvc: card.cvc } as never,
        shopperReference, storePaymentMethod: true, shopperInteraction: 'Ecommerce' as never, recurringProcessingModel: 'CardOnFile' as never,
        returnUrl: this.returnUrl,
      }, { idempotencyKey: `tokenize-${shopperReference}` });
    } catch (err) {
      throw mapError(err);
    }
    const extra = (res.additionalData ?? {}) as Record<string, string>;
    const stored = extra['tokenization.storedPaymentMethodId'] ?? extra['recurring.recurringDetailReference'];
    if (res.resultCode !== 'Authorised' || !stored) {
      throw new CardRejectedError(declineCode(res.refusalReason ?? null), `Adyen: the card was not accepted (${res.refusalReason ?? res.resultCode ?? 'no result'}).`);
    }
    return {
      token: `${shopperReference}:${stored}`,
      brand: BRANDS[extra.paymentMethod ?? ''] ?? cardBrand(number),
      last4: extra.cardSummary ?? number.slice(-4),
      expMonth: card.exp_month,
      expYear: fullExpiryYear(card.exp_year),
      fingerprint: this.fingerprint(number),
    };
  }

  async charge(req: ChargeRequest): Promise<ChargeResult> {
    const [shopperReference, storedPaymentMethodId] = req.card.token.split(':');
    if (!shopperReference || !storedPaymentMethodId) throw new GatewayRejectedError('invalid_token', 'Adyen: the card token is not an Adyen stored payment method.');
    let res;
    try {
      res = await (await this.checkout()).PaymentsApi.payments({
        amount: { currency: req.currency.toUpperCase(), value: req.amount }, reference: req.paymentId, merchantAccount: this.opts.merchantAccount,
        paymentMethod: { type: 'scheme', storedPaymentMethodId } as never, shopperReference,
        shopperInteraction: 'ContAuth' as never, recurringProcessingModel: 'CardOnFile' as never,
        metadata: { payment_id: req.paymentId, ...(req.customerId ? { customer_id: req.customerId } : {}) }, returnUrl: this.returnUrl,
        ...(req.description ? { shopperStatement: req.description.slice(0, 22) } : {}),
      }, { idempotencyKey: req.idempotencyKey });
    } catch (err) {
      throw mapError(err);
    }
    const reference = res.pspReference ?? null;
    switch (res.resultCode) {
      case 'Authorised': {
        if (!reference) throw new GatewayUnavailableError('Adyen: an authorisation without a pspReference; asking again.');
        return { outcome: 'succeeded', reference, fees: null, settlementDate: null, riskScore: riskOf(res.fraudResult) };
      }
      case 'RedirectShopper':
      case 'IdentifyShopper':
      case 'ChallengeShopper':
        return { outcome: 'declined', reference, declineCode: 'authentication_required', message: 'Adyen: the card requires 3-D Secure authentication by the shopper.', riskScore: riskOf(res.fraudResult) };
      case 'Pending':
      case 'Received':
      case 'PresentToShopper':
        throw new GatewayUnavailableError(`Adyen: the payment is ${res.resultCode}; asking again with the same key.`);
      default:
        return {
          outcome: 'declined', reference, declineCode: declineCode(res.refusalReason ?? null),
          message: `Adyen: ${res.refusalReason ?? res.resultCode ?? 'refused'}`, riskScore: riskOf(res.fraudResult),
        };
    }
  }

  async refund(req: RefundRequest): Promise<{ reference: string }> {
    try {
      const res = await (await this.checkout()).ModificationsApi.refundCapturedPayment(req.chargeReference, {
        merchantAccount: this.opts.merchantAccount, amount: { currency: req.currency.toUpperCase(), value: req.amount }, reference: req.idempotencyKey,
      }, { idempotencyKey: req.idempotencyKey });
      return { reference: res.pspReference };
    } catch (err) {
      throw mapError(err);
    }
  }

  async transfer(_req: TransferRequest): Promise<TransferResult> {
    return { outcome: 'failed', code: 'transfers_not_supported', message: 'Marketplace transfers are not available through the Adyen adapter.' };
  }

  /** No marketplace balance through this adapter (transfers are not supported either). */
  async balance(_req: BalanceRequest): Promise<{ available: number }> {
    throw new GatewayRejectedError('transfers_not_supported', 'Marketplace balances and transfers are not available through the Adyen adapter.');
  }

  async reverseTransfer(_req: ReversalRequest): Promise<{ reference: string }> {
    throw new GatewayRejectedError('transfers_not_supported', 'Marketplace transfers are not available through the Adyen adapter.');
  }
}

/** Adyen's refusal reasons (documented list) as our decline codes. */
const REFUSALS: Record<string, string> = {
  'Refused': 'generic_decline', 'Not enough balance': 'insufficient_funds', 'Expired Card': 'expired_card', 'CVC Declined': 'incorrect_cvc',
  'Blocked Card': 'card_blocked', 'Acquirer Fraud': 'fraudulent', 'FRAUD': 'fraudulent', 'Invalid Card Number': 'incorrect_number',
  'Withdrawal amount exceeded': 'card_velocity_exceeded', 'Restricted Card': 'restricted_card', 'Issuer Unavailable': 'issuer_not_available',
};
function declineCode(reason: string | null): string {
  return (reason && REFUSALS[reason]) ?? 'generic_decline';
}

function riskOf(fraud: { accountScore?: number } | null | undefined): number | null {
  return typeof fraud?.accountScore === 'number' ? Math.max(0, Math.min(100, fraud.accountScore)) : null;
}

/** Adyen's errors as ours: 429, 5xx and network failures are retried with the same key; other 4xx are refusals. */
function mapError(err: unknown): Error {
  if (sdk && err instanceof sdk.HttpClientException) {
    const status = err.statusCode ?? 0;
    const detail = `Adyen: ${err.errorCode ? `${err.errorCode} ` : ''}${(err.apiError as { message?: string } | undefined)?.message ?? err.message}`;
    if (status === 429 || status >= 500 || status === 0) return new GatewayUnavailableError(detail);
    return new GatewayRejectedError(err.errorCode ? `adyen_${err.errorCode}` : `adyen_http_${status}`, detail);
  }
  return new GatewayUnavailableError(`Adyen: ${(err as Error)?.message ?? 'unknown error'}`);
}
