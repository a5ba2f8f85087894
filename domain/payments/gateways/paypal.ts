import { createHmac } from 'node:crypto';
import type {
  OrdersController, PaymentsController, VaultController, Order, OrderRequest, SetupTokenRequest,
} from '@paypal/paypal-server-sdk';
import type * as Sdk from '@paypal/paypal-server-sdk';
import { toDecimalString } from '../../money.ts';
import { cardBrand, fullExpiryYear, normalizeCardNumber, type CardBrand, type CardInput, type CardOnFile } from '../cards.ts';
import {
  CardRejectedError, GatewayRejectedError, GatewayUnavailableError,
  type ChargeRequest, type ChargeResult, type PaymentGateway, type RefundRequest, type ReversalRequest, type TransferRequest, type TransferResult, type BalanceRequest,
} from './types.ts';

/**
 * The PayPal adapter (official `@paypal/paypal-server-sdk`): cards are vaulted once (a setup
 * token with the card, then a payment token from it — Vault v3), and each charge is an Orders v2
 * order with `intent: CAPTURE` paid by the vaulted card (`payment_source.card.vault_id`), sent
 * with our idempotency key as `PayPal-Request-Id` (PayPal keeps it for 6 hours; the workflow's
 * retries fall well inside). Amounts are decimal strings at the currency's exponent.
 *
 * Outcomes: order COMPLETED with its capture COMPLETED (or PENDING) → succeeded (capture id as the
 * reference, PayPal's fee from the seller receivable breakdown); capture DECLINED/FAILED →
 * declined with the processor response code mapped; order PAYER_ACTION_REQUIRED (3-D Secure) →
 * declined `authentication_required`; 422 UNPROCESSABLE_ENTITY (INSTRUMENT_DECLINED, …) →
 * declined; 429, 5xx and network failures → GatewayUnavailableError (same key next time); other
 * 4xx → GatewayRejectedError. The SDK's own retries are off (the workflow retries). Transfers are
 * not offered (PayPal payouts are another product).
 *
 * `apiBase` points the SDK at another host (a local double in tests) through its HTTP client's
 * adapter option; without it PayPal's sandbox or live host is used.
 */
export interface PayPalOptions {
  clientId: string;
  clientSecret: string;
  environment: 'sandbox' | 'live';
  apiBase?: string;
  timeoutMs?: number;
  fingerprintKey?: string | null;
}

const BRANDS: Record<string, CardBrand> = {
  VISA: 'visa', MASTERCARD: 'mastercard', MASTER_CARD: 'mastercard', AMEX: 'amex', DISCOVER: 'discover', DINERS: 'diners', JCB: 'jcb', CHINA_UNION_PAY: 'unionpay',
};

/** PayPal processor response codes (documented) as our decline codes. */
const PROCESSOR_CODES: Record<string, string> = {
  '0500': 'generic_decline', '5400': 'expired_card', '5120': 'insufficient_funds', '0580': 'card_not_supported', '00N7': 'incorrect_cvc',
  '5110': 'incorrect_cvc', '1330': 'incorrect_number', '9500': 'fraudulent', '0800': 'card_velocity_exceeded', '5180': 'incorrect_number',
};

interface AxiosLikeConfig { url?: string; method?: string; headers?: { toJSON?: () => Record<string, unknown> } & Record<string, unknown>; data?: unknown; auth?: { username: string; password: string }; timeout?: number }

/** An axios adapter (the SDK's HTTP client is axios) that sends every request to `base` instead of PayPal's host. */
function rebasedAdapter(base: string) {
  return async (config: AxiosLikeConfig) => {
    const url = new URL(config.url!);
    const target = new URL(url.pathname + url.search, base);
    const raw = typeof config.headers?.toJSON === 'function' ? config.headers.toJSON() : { ...config.headers };
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(raw)) if (v !== undefined && v !== null && typeof v !== 'object') headers[k] = String(v);
    if (config.auth) headers.Authorization = `Basic ${Buffer.from(`${config.auth.username}:${config.auth.password}`).toString('base64')}`;
    const res = await fetch(target, {
      method: (config.method ?? 'get').toUpperCase(), headers, body: config.data === undefined || config.data === null ? undefined : String(config.data),
      signal: AbortSignal.timeout(config.timeout || 20_000),
    });
    return { data: await res.text(), status: res.status, statusText: res.statusText, headers: Object.fromEntries(res.headers), config, request: {} };
  };
}

/** The SDK, loaded on first use (half a second to import; see the Adyen adapter). */
let sdk: typeof Sdk | undefined;
let loading: Promise<typeof Sdk> | undefined;
const loadSdk = () => (loading ??= import('@paypal/paypal-server-sdk').then((loaded) => (sdk = loaded)));

interface Controllers { orders: OrdersController; payments: PaymentsController; vault: VaultController }

export class PayPalGateway implements PaymentGateway {
  readonly name = 'paypal' as const;
  private readonly opts: PayPalOptions;
  private controllers: Promise<Controllers> | undefined;

  constructor(opts: PayPalOptions) {
    this.opts = opts;
  }

  private api(): Promise<Controllers> {
    return (this.controllers ??= loadSdk().then(({ Client, Environment, OrdersController, PaymentsController, VaultController }) => {
      const { opts } = this;
      const client = new Client({
        clientCredentialsAuthCredentials: { oAuthClientId: opts.clientId, oAuthClientSecret: opts.clientSecret },
        environment: opts.environment === 'live' ? Environment.Production : Environment.Sandbox,
        timeout: opts.timeoutMs ?? 20_000,
        httpClientOptions: { timeout: opts.timeoutMs ?? 20_000, retryConfig: { maxNumberOfRetries: 0 } },
        ...(opts.apiBase ? { unstable_httpClientOptions: { adapter: rebasedAdapter(opts.apiBase) } } : {}),
        // The SDK logs every request and response by default; ours are logged by the platform, never with card data.
        logging: { logger: { log: () => undefined } } as never,
      });
      return { orders: new OrdersController(client), payments: new PaymentsController(client), vault: new VaultController(client) };
    }));
  }

  async tokenizeCard(card: CardInput): Promise<CardOnFile> {
    const number = normalizeCardNumber(card.number);
    const expiry = `${fullExpiryYear(card.exp_year)}-${String(card.exp_month).padStart(2, '0')}`;
    try {
      const setupBody: SetupTokenRequest = { paymentSource: { card: { number, expiry, securityCode: card.cvc } } };
      const setup = await (await this.api()).vault.createSetupToken({ body: setupBody, paypalRequestId: `setup-${this.fingerprint(number)}-${Date.now()}` });
      if (!setup.result.id || setup.result.status === 'PAYER_ACTION_REQUIRED') {
        throw new CardRejectedError('authentication_required', 'PayPal: the card needs the cardholder to authenticate before it can be vaulted.');
      }
      const token = await (await this.api()).vault.createPaymentToken({
        body: { paymentSource: { token: { id: setup.result.id, type: 'SETUP_TOKEN' as never } } }, paypalRequestId: `vault-${setup.result.id}`,
      });
      const c = token.result.paymentSource?.card;
      if (!token.result.id) throw new GatewayUnavailableError('PayPal: the vault answered without a payment token id.');
      const [year, month] = (c?.expiry ?? expiry).split('-').map(Number);
      return {
        token: token.result.id, brand: BRANDS[c?.brand ?? ''] ?? cardBrand(number), last4: c?.lastDigits ?? number.slice(-4),
        expMonth: month ?? card.exp_month, expYear: year ?? fullExpiryYear(card.exp_year), fingerprint: this.fingerprint(number),
      };
    } catch (err) {
      if (err instanceof CardRejectedError || err instanceof GatewayUnavailableError) throw err;
      const mapped = mapError(err);
      if (mapped instanceof PayPalRefusal && mapped.status === 422) throw new CardRejectedError(mapped.declineCode, mapped.message);
      throw mapped;
    }
  }

  private fingerprint(number: string): string {
    return createHmac('sha256', this.opts.fingerprintKey ?? 'paypal').update(number).digest('hex').slice(0, 32);
  }

  async charge(req: ChargeRequest): Promise<ChargeResult> {
    const body: OrderRequest = {
      intent: 'CAPTURE' as never,
      purchaseUnits: [{
        referenceId: req.paymentId, customId: req.paymentId, ...(req.description ? { description: req.description.slice(0, 127) } : {}),
        amount: { currencyCode: req.currency.toUpperCase(), value: toDecimalString(req.amount, req.currency.toUpperCase()) },
      }],
      paymentSource: { card: { vaultId: req.card.token } },
    };
    let order: Order;
    try {
      order = (await (await this.api()).orders.createOrder({ body, paypalRequestId: req.idempotencyKey, prefer: 'return=representation' })).result;
    } catch (err) {
      const mapped = mapError(err);
      if (mapped instanceof PayPalRefusal && mapped.status === 422) {
        return { outcome: 'declined', reference: null, declineCode: mapped.declineCode, message: mapped.message, riskScore: null };
      }
      throw mapped;
    }
    if (order.status === 'PAYER_ACTION_REQUIRED') {
      return { outcome: 'declined', reference: order.id ?? null, declineCode: 'authentication_required', message: 'PayPal: the card requires 3-D Secure authentication by the payer.', riskScore: null };
    }
    const capture = order.purchaseUnits?.[0]?.payments?.captures?.[0];
    if (!capture?.id) throw new GatewayUnavailableError(`PayPal: order ${order.id ?? '?'} is ${order.status ?? 'unknown'} without a capture; asking again with the same key.`);
    if (capture.status === 'COMPLETED' || capture.status === 'PENDING') {
      const fee = capture.sellerReceivableBreakdown?.paypalFee;
      return {
        outcome: 'succeeded', reference: capture.id, riskScore: null, settlementDate: null,
        fees: fee?.value ? toMinor(fee.value, fee.currencyCode ?? req.currency) : null,
      };
    }
    const code = capture.processorResponse?.responseCode ?? '';
    return { outcome: 'declined', reference: capture.id, declineCode: PROCESSOR_CODES[code] ?? 'generic_decline', message: `PayPal: the capture was ${capture.status ?? 'declined'} (processor response ${code || 'none'}).`, riskScore: null };
  }

  async refund(req: RefundRequest): Promise<{ reference: string }> {
    try {
      const res = await (await this.api()).payments.refundCapturedPayment({
        captureId: req.chargeReference, paypalRequestId: req.idempotencyKey, prefer: 'return=minimal',
        body: { amount: { currencyCode: req.currency.toUpperCase(), value: toDecimalString(req.amount, req.currency.toUpperCase()) } },
      });
      if (!res.result.id) throw new GatewayUnavailableError('PayPal: the refund answered without an id.');
      return { reference: res.result.id };
    } catch (err) {
      if (err instanceof GatewayUnavailableError) throw err;
      throw mapError(err);
    }
  }

  async transfer(_req: TransferRequest): Promise<TransferResult> {
    return { outcome: 'failed', code: 'transfers_not_supported', message: 'Marketplace transfers are not available through the PayPal adapter.' };
  }

  /** No marketplace balance through this adapter (transfers are not supported either). */
  async balance(_req: BalanceRequest): Promise<{ available: number }> {
    throw new GatewayRejectedError('transfers_not_supported', 'Marketplace balances and transfers are not available through the PayPal adapter.');
  }

  async reverseTransfer(_req: ReversalRequest): Promise<{ reference: string }> {
    throw new GatewayRejectedError('transfers_not_supported', 'Marketplace transfers are not available through the PayPal adapter.');
  }
}

function toMinor(value: string, currency: string): number | null {
  const m = /^(\d+)(?:\.(\d+))?$/.exec(value);
  if (!m) return null;
  const digits = currency.toUpperCase() === 'JPY' ? 0 : ['KWD', 'BHD', 'OMR', 'JOD', 'TND'].includes(currency.toUpperCase()) ? 3 : 2;
  return Number(m[1]) * 10 ** digits + Number((m[2] ?? '').padEnd(digits, '0').slice(0, digits) || '0');
}

/** A refusal with the HTTP status it came with and the decline code it stands for (422: a card decline). */
class PayPalRefusal extends GatewayRejectedError {
  readonly status: number;
  readonly declineCode: string;
  constructor(code: string, message: string, status: number, declineCode: string) {
    super(code, message);
    this.status = status;
    this.declineCode = declineCode;
  }
}

const ISSUES: Record<string, string> = {
  INSTRUMENT_DECLINED: 'generic_decline', CARD_EXPIRED: 'expired_card', INVALID_SECURITY_CODE_LENGTH: 'incorrect_cvc', CARD_TYPE_NOT_SUPPORTED: 'card_not_supported',
  TRANSACTION_REFUSED: 'generic_decline', INVALID_CARD_NUMBER: 'incorrect_number', CARD_CLOSED: 'card_blocked',
};

interface PayPalErrorBody { name?: string; message?: string; details?: { issue?: string; description?: string }[]; error?: string }

function errorBody(raw: unknown): PayPalErrorBody {
  if (typeof raw !== 'string') return {};
  try {
    return JSON.parse(raw) as PayPalErrorBody;
  } catch {
    return {};
  }
}

/** PayPal's errors as ours, keeping the error name, issue and message (never the request). */
function mapError(err: unknown): GatewayRejectedError | GatewayUnavailableError {
  if (sdk && err instanceof sdk.ApiError) {
    const status = err.statusCode;
    const body = errorBody(err.body);
    const issue = body.details?.[0]?.issue ?? body.name ?? body.error ?? `http_${status}`;
    const message = `PayPal: ${issue}${body.details?.[0]?.description ? ` — ${body.details[0].description}` : body.message ? ` — ${body.message}` : ''}`;
    if (status === 429 || status >= 500) return new GatewayUnavailableError(message);
    return new PayPalRefusal(`paypal_${issue.toLowerCase()}`, message, status, ISSUES[issue] ?? 'generic_decline');
  }
  return new GatewayUnavailableError(`PayPal: ${(err as Error)?.message ?? 'unknown error'}`);
}
