/** What other areas may use of billing. */
export { paidInvoiceTotals } from './revenue.ts';
/** A test clock of the caller's account (404 otherwise): communications reads its frozen time as "now". */
export { findTestClock } from './service.ts';
/** Read-only lists of subscriptions and invoices (the /v3/ai tools read through them). */
export { listSubscriptions, listInvoices } from './service.ts';
/** Batch reads for GraphQL's loaders (a customer's subscriptions and invoices, many customers at once) and the resource schemas. */
export { subscriptionsOfCustomers, invoicesOfCustomers } from './service.ts';
export { subscriptionSchema, invoiceSchema, type SubscriptionView, type InvoiceView } from './schemas.ts';
/** Creating and canceling subscriptions (REST and GraphQL's mutations): the request schemas and the services. */
export { subscriptionBody, subscriptionInput, cancelSubscriptionBody } from './requests.ts';
export { createSubscription, cancelSubscription, type BillingContext } from './subscriptions.ts';
