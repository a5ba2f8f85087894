/**
 * What other areas may use of rewards: customers' loyalty balances, read in batches (GraphQL's
 * `Customer.loyalty`), and the balance's schema. See docs/rewards.md.
 */
export { balancesOf } from './service.ts';
export { balanceSchema, type BalanceView } from './schemas.ts';
