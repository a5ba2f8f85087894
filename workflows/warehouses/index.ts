export { transferWorkflow } from './transfer.ts';
export { cycleCountWorkflow } from './cycle-count.ts';
