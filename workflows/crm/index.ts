/** The CRM area's workflows. */
export { crmAutomationWorkflow } from './automation.ts';
