/**
 * Imported first by every entry point (api/main.ts, worker/main.ts, bin/start.ts): starts tracing
 * when the environment asks for it, before any module loads `pg` (see platform/telemetry.ts).
 */
import { startTelemetry } from './telemetry.ts';

startTelemetry();
