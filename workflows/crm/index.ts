/** The CRM area's workflows. */
export { crmAutomationWorkflow } from './automation.ts';
export { customerSegmentsWorkflow, segmentEvaluationWorkflow } from './segments.ts';
