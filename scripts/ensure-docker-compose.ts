/**
 * Makes sure Docker Compose can run here (DOCKER_COMPOSE_BIN, the `docker compose` plugin,
 * `docker-compose` on PATH or in `.tools/bin`, else built once with Go) and says which one; the
 * tests validate docker-compose.yml with it (`docker compose config`, no Docker engine needed).
 * Uses only Node built-ins, so CI runs it beside `npm ci`:
 *   scripts/node24.sh node scripts/ensure-docker-compose.ts
 */
import { ensureDockerCompose } from '../platform/docker-compose.ts';

try {
  const compose = await ensureDockerCompose((line) => console.error(line));
  console.log(`Docker Compose: ${[compose.command, ...compose.args].join(' ')} (${compose.source})`);
} catch (err) {
  console.error((err as Error).message);
  process.exit(1);
}
