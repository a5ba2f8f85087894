/**
 * What a decline code means to the person paying, and what to do next. Codes are Stripe's decline
 * codes (https://docs.stripe.com/declines/codes), which most clients already handle.
 */
const DECLINES: Record<string, { message: string; suggestion: string }> = {
  generic_decline: {
    message: 'The card was declined by the issuer.',
    suggestion: 'Ask the customer to use another card or to contact their card issuer.',
  },
  insufficient_funds: {
    message: 'The card has insufficient funds to complete the purchase.',
    suggestion: 'Ask the customer to use another card or another payment method.',
  },
  lost_card: {
    message: 'The card was reported lost.',
    suggestion: 'Do not retry this card; ask the customer for another payment method (do not tell them the specific reason).',
  },
  stolen_card: {
    message: 'The card was reported stolen.',
    suggestion: 'Do not retry this card; ask the customer for another payment method (do not tell them the specific reason).',
  },
  expired_card: {
    message: 'The card has expired.',
    suggestion: 'Ask the customer to use a card that has not expired.',
  },
  incorrect_cvc: {
    message: 'The card\'s security code is incorrect.',
    suggestion: 'Ask the customer to check the CVC on the back of the card and try again.',
  },
  fraudulent: {
    message: 'The payment was blocked because it looks fraudulent.',
    suggestion: 'Do not retry; review the payment\'s risk signals and ask the customer for another payment method if it is legitimate.',
  },
  highest_risk_level: {
    message: 'The payment was blocked by fraud protection: its risk score is above the blocking threshold.',
    suggestion: 'Review the payment\'s risk_score; retry with a customer_id the customer is known by, or without fraud_protection if you accept the risk.',
  },
  processing_error: {
    message: 'An error occurred while processing the card.',
    suggestion: 'Retry the payment later with a new Idempotency-Key; if it keeps failing, use another card.',
  },
  authentication_required: {
    message: 'The card requires authentication (3-D Secure), which this API does not support yet.',
    suggestion: 'Use a card that does not require authentication.',
  },
};

export function describeDecline(code: string): { message: string; suggestion: string } {
  return DECLINES[code] ?? DECLINES.generic_decline!;
}
