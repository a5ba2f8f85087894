/** What other areas may use of communications: read-only call lists (GraphQL) and the call schema. */
export { listCalls } from './calls.ts';
export { callSchema, type CallView } from './schemas.ts';
