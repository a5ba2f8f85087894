import { Migration0001PlatformFoundation } from './0001-platform-foundation.ts';

/** Checked-in migrations in order. Each new migration file is added to the end of this list. */
export const migrations = [{ name: '0001-platform-foundation', class: Migration0001PlatformFoundation }];
