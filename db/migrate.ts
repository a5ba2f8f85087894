/** Production entry point: `node dist/db/migrate.js` applies pending migrations and exits. */
import { loadConfigOrExit } from '../platform/config.ts';
import { createOrm, migrate } from './orm.ts';

const config = loadConfigOrExit();
if (!config.DATABASE_URL) {
  console.error('DATABASE_URL is required to run migrations.');
  process.exit(78);
}
const orm = await createOrm({ url: config.DATABASE_URL, poolMax: 2, statementTimeoutMs: 0 });
try {
  const applied = await migrate(orm);
  console.log(applied.length ? `Applied migrations: ${applied.join(', ')}` : 'Database is up to date.');
} finally {
  await orm.close(true);
}
