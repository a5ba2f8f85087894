import type { Scenario, StandaloneScenario } from './harness.ts';
import { scenario as analytics } from './analytics.ts';
import { scenario as billing } from './billing.ts';
import { scenario as commerce } from './commerce.ts';
import { scenario as communications } from './communications.ts';
import { scenario as erp } from './erp.ts';
import { scenario as foundation } from './foundation.ts';
import { scenario as payments } from './payments.ts';
import { scenario as rewards } from './rewards.ts';
import { scenario as scale } from './scale.ts';
import { scenario as segments } from './segments.ts';
import { scenario as shipping } from './shipping.ts';
import { scenario as warehouses } from './warehouses.ts';
import { scenario as warehousesSequence } from './warehouses-sequence.ts';
import { scenario as webhooks } from './webhooks.ts';

/** Every benchmark `npm run bench` runs, in order. `npm run bench -- <name-substring>` runs a subset. */
export const scenarios: (Scenario | StandaloneScenario)[] = [foundation, webhooks, payments, commerce, billing, communications, shipping, erp, rewards, warehouses, analytics, segments, warehousesSequence, scale];
