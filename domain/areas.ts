import { aiArea } from './ai/area.ts';
import { analyticsArea } from './analytics/area.ts';
import { billingArea } from './billing/area.ts';
import { communicationsArea } from './communications/area.ts';
import { commerceArea } from './commerce/area.ts';
import { crmArea } from './crm/area.ts';
import { customersArea } from './customers/area.ts';
import { dashboardArea } from './dashboard/area.ts';
import { erpArea } from './erp/area.ts';
import { graphqlArea } from './graphql/area.ts';
import { identityArea } from './identity/area.ts';
import { paymentsArea } from './payments/area.ts';
import { platformArea } from './platform/area.ts';
import { shippingArea } from './shipping/area.ts';
import { rewardsArea } from './rewards/area.ts';
import { warehousesArea } from './warehouses/area.ts';
import { webhooksArea } from './webhooks/area.ts';

/**
 * Every area, once. The API, the worker, the ORM, the migration runner, the event catalog, the
 * OpenAPI document, the permission list and the admin router read this list (through
 * domain/registry.ts); nothing else names areas. Adding an area: its folders, its descriptor
 * (`domain/<area>/area.ts`) and one line here — see docs/adding-an-area.md.
 */
export const AREAS = [
  platformArea,
  customersArea,
  paymentsArea,
  billingArea,
  commerceArea,
  crmArea,
  shippingArea,
  erpArea,
  rewardsArea,
  warehousesArea,
  analyticsArea,
  webhooksArea,
  communicationsArea,
  identityArea,
  dashboardArea,
  aiArea,
  graphqlArea,
] as const;
