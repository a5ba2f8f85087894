import { customerRoutes } from '../../api/v3/customers/routes.ts';
import { Migration0166CustomersSearch } from '../../db/migrations/0166-customers-search.ts';
import { defineArea } from '../../platform/area.ts';
import { Customer } from './entities.ts';
import { customerEvents } from './events.ts';

/** Customers: the customer record every other area refers to (`cus_…`). Read and written with the CRM scope. */
export const customersArea = defineArea({
  name: 'customers',
  permissions: ['crm'],
  routes: customerRoutes,
  entities: [Customer],
  events: customerEvents,
  migrations: [{ name: '0166-customers-search', class: Migration0166CustomersSearch }],
});
