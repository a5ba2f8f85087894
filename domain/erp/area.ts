import { createErpActivities } from '../../activities/erp/index.ts';
import { erpAdminRouter } from '../../api/admin/erp/router.ts';
import { erpRoutes } from '../../api/v3/erp/routes.ts';
import { nativePool } from '../../db/pool.ts';
import { Migration0040Erp } from '../../db/migrations/0040-erp.ts';
import { Migration0164ErpListFilters } from '../../db/migrations/0164-erp-list-filters.ts';
import { defineArea } from '../../platform/area.ts';
import { ErpLedger, ExchangeRate, FinancialTransaction, JournalLine, LedgerAccount, ProcurementOrder, Project, Vendor } from './entities.ts';
import { erpEvents } from './events.ts';
import { ledgerPostingConsumer } from './postings.ts';
import { SandboxVendor, type VendorAdapter } from './vendor-adapter.ts';

declare module '../../platform/services.ts' {
  interface AreaServices {
    /** How purchase orders reach vendors (the sandbox vendor until a real channel is configured). */
    vendorAdapter: VendorAdapter;
  }
}

/**
 * ERP: the double-entry ledger (chart of accounts, exchange rates, transactions, reversals, trial
 * balance, postings from other areas' events), projects with analytics, vendors and purchase orders
 * (one workflow each: approvals, escalation, vendor, receipts, the bill's three-way match).
 * Scopes: `erp` for its routes; `procurement` and `finance` are the approvers' permissions
 * (`procurement:write` approves the first level, `finance:write` the second).
 */
export const erpArea = defineArea({
  name: 'erp',
  permissions: ['erp', 'procurement', 'finance'],
  routes: erpRoutes,
  workflows: new URL('../../workflows/erp/index.ts', import.meta.url),
  activities: createErpActivities,
  entities: [ErpLedger, LedgerAccount, ExchangeRate, FinancialTransaction, JournalLine, Project, Vendor, ProcurementOrder],
  migrations: [
    { name: '0040-erp', class: Migration0040Erp },
    { name: '0164-erp-list-filters', class: Migration0164ErpListFilters },
  ],
  events: erpEvents,
  consumers: [ledgerPostingConsumer],
  services: ({ orm }) => ({ vendorAdapter: new SandboxVendor(() => nativePool(orm)) }),
  admin: { erp: erpAdminRouter },
});
