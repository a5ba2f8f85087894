import type { Scenario } from './harness.ts';
import { scenario as billing } from './billing.ts';
import { scenario as commerce } from './commerce.ts';
import { scenario as foundation } from './foundation.ts';
import { scenario as payments } from './payments.ts';
import { scenario as segments } from './segments.ts';
import { scenario as webhooks } from './webhooks.ts';

/** Every benchmark `npm run bench` runs, in order. `npm run bench -- <name-substring>` runs a subset. */
export const scenarios: Scenario[] = [foundation, webhooks, payments, commerce, billing, segments];
