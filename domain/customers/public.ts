/** What other areas may use of customers: the record, its view, and the id check every area does. */
export { Customer } from './entities.ts';
export { checkCustomers, customerView } from './service.ts';
export { customerExample } from './events.ts';
export { CUSTOMER_TYPES, customerSchema, type CustomerView } from './schemas.ts';
/** Read-only search of customers (the /v3/ai tools read through it). */
export { listCustomers, type CustomerFilters } from './service.ts';
/** Batch read and the writes with their request schemas (GraphQL's loaders and mutations, the same as REST's). */
export { customersByIds, createCustomer, updateCustomer } from './service.ts';
export { customerCreateBody, customerUpdateBody } from './requests.ts';
