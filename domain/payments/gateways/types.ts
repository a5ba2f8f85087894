import type { CardInput, CardOnFile } from '../cards.ts';

/**
 * One interface for every payment gateway. Every call that moves money carries an idempotency key
 * derived from our own ids, so a retried activity (or a retried request) reaches the gateway as
 * the same operation and money moves once.
 */
export const GATEWAY_NAMES = ['sandbox', 'stripe', 'adyen', 'paypal'] as const;
export type GatewayName = (typeof GATEWAY_NAMES)[number];

/**
 * The gateways that make marketplace transfers (and report a platform balance). Adyen and PayPal
 * answer `transfers_not_supported` (Adyen for Platforms and PayPal's partner payouts are other
 * products), so marketplace splits are routed past them.
 */
const TRANSFER_GATEWAYS: ReadonlySet<GatewayName> = new Set(['sandbox', 'stripe']);
export function supportsTransfers(gateway: GatewayName): boolean {
  return TRANSFER_GATEWAYS.has(gateway);
}

/**
 * The gateway account money moves in (its balance): one per account and mode, `<account id>:<live|test>`.
 * Stripe knows it from the API key and ignores it; the sandbox keeps a balance per merchant and currency.
 */
export function gatewayMerchant(scope: { accountId: string; livemode: boolean }): string {
  return `${scope.accountId}:${scope.livemode ? 'live' : 'test'}`;
}

export interface ChargeRequest {
  idempotencyKey: string;
  merchant: string;
  amount: number;
  currency: string;
  card: Pick<CardOnFile, 'token' | 'fingerprint'>;
  customerId: string | null;
  description: string | null;
  fraudProtection: boolean;
  /** Our payment id, passed to the gateway as metadata. */
  paymentId: string;
}

export type ChargeResult =
  | {
    outcome: 'succeeded';
    reference: string;
    /**
     * The charge a transfer names as its source (`source_transaction`) when it is not `reference`:
     * Stripe's `ch_…` behind the PaymentIntent `pi_…`. Absent: `reference` is the charge.
     */
    chargeReference?: string | null;
    fees: number | null;
    /** YYYY-MM-DD. */
    settlementDate: string | null;
    riskScore: number | null;
  }
  | {
    outcome: 'declined';
    reference: string | null;
    declineCode: string;
    message: string;
    riskScore: number | null;
  };

export interface RefundRequest {
  idempotencyKey: string;
  /** The gateway's reference of the charge (ChargeResult.reference). */
  chargeReference: string;
  amount: number;
  currency: string;
}

export interface TransferRequest {
  idempotencyKey: string;
  merchant: string;
  destination: string;
  amount: number;
  currency: string;
  /**
   * The charge that funds it (its ChargeResult's `chargeReference`, else `reference`; Stripe sends a
   * `ch_…` as `source_transaction`); null: paid out of the merchant's available balance (refused when short).
   */
  chargeReference: string | null;
  /** Groups a payment's transfers at the gateway (our payment id). */
  group: string;
}

export type TransferResult =
  | { outcome: 'paid'; reference: string }
  | {
    outcome: 'failed'; code: string; message: string;
    /** `balance_insufficient`: the balance available in the transfer's currency (minor units), when the gateway says. */
    available?: number;
  };

export interface BalanceRequest {
  merchant: string;
  currency: string;
}

/** Reverses (part of) a transfer; `amount` in minor units of the transfer's `currency`. */
export interface ReversalRequest {
  idempotencyKey: string;
  transferReference: string;
  amount: number;
  currency: string;
}

export interface PaymentGateway {
  readonly name: GatewayName;
  /** Exchanges card details for a token; the only call that ever sees the full number and CVC. */
  tokenizeCard(card: CardInput): Promise<CardOnFile>;
  charge(req: ChargeRequest): Promise<ChargeResult>;
  refund(req: RefundRequest): Promise<{ reference: string }>;
  transfer(req: TransferRequest): Promise<TransferResult>;
  reverseTransfer(req: ReversalRequest): Promise<{ reference: string }>;
  /** The merchant's available balance in a currency, minor units (what transfers without a charge may pay out). */
  balance(req: BalanceRequest): Promise<{ available: number }>;
}

/** The gateway could not be reached or failed on its side: retry later with the same key. */
export class GatewayUnavailableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'GatewayUnavailableError';
  }
}

/** The gateway refused the request itself (bad parameters, refund over the charge…): do not retry. */
export class GatewayRejectedError extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.name = 'GatewayRejectedError';
    this.code = code;
  }
}

/** The card was declined at tokenization (e.g. a number the gateway does not accept). */
export class CardRejectedError extends Error {
  readonly declineCode: string;
  readonly field: string | null;
  constructor(declineCode: string, message: string, field: string | null = null) {
    super(message);
    this.name = 'CardRejectedError';
    this.declineCode = declineCode;
    this.field = field;
  }
}
