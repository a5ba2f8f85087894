import { Migration0001PlatformFoundation } from './0001-platform-foundation.ts';
import { Migration0002CommerceCrm } from './0002-commerce-crm.ts';
import { Migration0003Webhooks } from './0003-webhooks.ts';
import { Migration0004Payments } from './0004-payments.ts';
import { Migration0005Billing } from './0005-billing.ts';
import { Migration0006AdmissionPerKey } from './0006-admission-per-key.ts';

/** Checked-in migrations in order. Each new migration file is added to the end of this list. */
export const migrations = [{ name: '0001-platform-foundation', class: Migration0001PlatformFoundation },
  { name: '0002-commerce-crm', class: Migration0002CommerceCrm },
  { name: '0003-webhooks', class: Migration0003Webhooks },
  { name: '0004-payments', class: Migration0004Payments },
  { name: '0005-billing', class: Migration0005Billing },
  { name: '0006-admission-per-key', class: Migration0006AdmissionPerKey },
];
