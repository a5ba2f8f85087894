/**
 * What other areas may use of the CRM, read-only: a customer's journey and interactions (the
 * /v3/ai summaries and reply drafts read them).
 */
export { Interaction } from './entities.ts';
export { customerJourney, type CustomerJourney } from './journey.ts';
export { interactionView, listInteractions } from './interactions.ts';
