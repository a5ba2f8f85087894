/**
 * What other areas may use of payments: cards (checked and tokenized here, so a full number never
 * reaches another area), the gateway choice, and the types a subscription keeps on file.
 */
export { checkCard, type CardInput, type CardOnFile } from './cards.ts';
export type { GatewayName } from './gateways/types.ts';
export type { PaymentGateways } from './gateways/index.ts';
export { chooseGateway, tokenize, tokenizeForSaving, type PaymentsContext, type SavedCard, type SavedCards } from './process.ts';
export { findSucceededPayment, type SucceededPayment } from './service.ts';
/** One payment, read-only (the /v3/ai tools read through it). */
export { getPayment } from './service.ts';
/** Many customers' payments at once (GraphQL's loaders) and the payment schema. */
export { paymentsOfCustomers } from './service.ts';
export { paymentSchema, type PaymentView } from './schemas.ts';
