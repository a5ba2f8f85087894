/** What other areas may use of the ERP: read-only project lists (GraphQL) and the project schema. */
export { listProjects } from './projects.ts';
export { projectSchema, type ProjectView } from './schemas.ts';
export { PROJECT_STATUSES } from './entities.ts';
