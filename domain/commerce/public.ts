/** What other areas may use of commerce: orders (for the CRM journey and shipping) and prices in other currencies. */
export { Order } from './entities.ts';
export { loadRates, priceIn } from './pricing.ts';
export { findOrder, orderView, type OrderView } from './orders.ts';
