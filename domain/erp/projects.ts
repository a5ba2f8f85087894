import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { conflict, notFound, validationFailed, type FieldError } from '../../platform/errors.ts';
import { checkCustomers } from '../customers/public.ts';
import { toMajorNumber } from '../money.ts';
import { readScopedOr404, scopeColumns, type Scope } from '../scope.ts';
import { projectAnalytics } from './accounting.ts';
import { Project, type Milestone, type ProjectStatus } from './entities.ts';
import { ensureLedger, noteBudget, projectTotals } from './ledger.ts';
import { projectView } from './project-view.ts';
import type { ProjectAnalyticsView, ProjectView } from './schemas.ts';

export { projectView };

/** Which statuses a project may move to from each status. */
export const PROJECT_TRANSITIONS: Record<ProjectStatus, readonly ProjectStatus[]> = {
  planned: ['in_progress', 'on_hold', 'cancelled'],
  in_progress: ['on_hold', 'completed', 'cancelled'],
  on_hold: ['in_progress', 'cancelled'],
  completed: [],
  cancelled: [],
};

export interface ProjectInput {
  id: string;
  name: string;
  description: string | null;
  customerId: string | null;
  /** Minor units of `currency`. */
  budget: number;
  currency: string | null;
  startDate: string;
  endDate: string;
  status: ProjectStatus;
  milestones: Milestone[];
  metadata: Record<string, string>;
}

async function checkCurrency(em: EntityManager, scope: Scope, currency: string | null): Promise<{ currency: string; errors: FieldError[] }> {
  const ledger = await ensureLedger(em, scope);
  const chosen = currency ?? ledger.baseCurrency;
  return {
    currency: chosen,
    errors: chosen === ledger.baseCurrency ? [] : [{
      path: 'currency', message: `projects are budgeted in the ledger's base currency (${ledger.baseCurrency}), so spending and budget compare exactly; send ${ledger.baseCurrency} or omit currency`,
    }],
  };
}

export async function createProject(em: EntityManager, scope: Scope, input: ProjectInput): Promise<ProjectView> {
  const existing = await em.findOne(Project, { id: input.id });
  if (existing) return projectView(existing);
  const { currency, errors } = await checkCurrency(em, scope, input.currency);
  errors.push(...await checkCustomers(em, input.customerId ? [['customer_id', input.customerId]] : []));
  if (input.endDate < input.startDate) errors.push({ path: 'end_date', message: `must be on or after start_date (${input.startDate})` });
  if (input.status === 'completed' || input.status === 'cancelled') errors.push({ path: 'status', message: 'a new project starts planned or in_progress (or on_hold)' });
  if (errors.length) throw validationFailed(errors);
  const now = new Date();
  const project = em.create(Project, {
    id: input.id, ...scopeColumns(scope), name: input.name, description: input.description, customerId: input.customerId, budget: input.budget,
    currency, startDate: input.startDate, endDate: input.endDate, status: input.status, milestones: input.milestones,
    budgetExceededAt: null, metadata: input.metadata, createdAt: now, updatedAt: now,
  });
  await em.flush();
  return projectView(project);
}

export async function findProject(em: EntityManager, id: string): Promise<Project> {
  const project = await em.findOne(Project, { id });
  if (!project) throw notFound('project', id);
  return project;
}

export async function getProject(em: EntityManager, id: string): Promise<ProjectView> {
  return projectView(await findProject(em, id));
}

/** Project by id for GET /v3/projects/{id}: one prepared statement, no EntityManager (readScopedOr404). */
export async function readProject(orm: MikroORM, scope: Scope, id: string): Promise<ProjectView> {
  return projectView(await readScopedOr404(orm, scope, Project, id, 'project'));
}

export async function listProjects(
  em: EntityManager, filters: { status?: ProjectStatus[] | undefined; customerId?: string | undefined },
  page: { where: Record<string, unknown>; direction: 'asc' | 'desc'; limit: number },
): Promise<ProjectView[]> {
  const rows = await em.find(Project, {
    ...page.where,
    ...(filters.status ? { status: { $in: filters.status } } : {}),
    ...(filters.customerId ? { customerId: filters.customerId } : {}),
  }, { orderBy: { id: page.direction }, limit: page.limit + 1 });
  return rows.map(projectView);
}

export interface ProjectChange {
  name?: string;
  description?: string | null;
  budget?: number;
  startDate?: string;
  endDate?: string;
  status?: ProjectStatus;
  milestones?: Milestone[];
  metadata?: Record<string, string>;
}

export async function updateProject(em: EntityManager, scope: Scope, id: string, change: ProjectChange, requestId: string | null): Promise<ProjectView> {
  return em.transactional(async (tx) => {
    const project = await tx.findOne(Project, { id }, { lockMode: 4 });
    if (!project) throw notFound('project', id);
    if (change.status && change.status !== project.status && !PROJECT_TRANSITIONS[project.status].includes(change.status)) {
      throw conflict('invalid_state_transition', `A ${project.status} project cannot become ${change.status}.`,
        PROJECT_TRANSITIONS[project.status].length
          ? `From ${project.status} a project may become ${PROJECT_TRANSITIONS[project.status].join(', ')}.`
          : `A ${project.status} project is final; create a new project instead.`,
        { current_state: project.status });
    }
    const start = change.startDate ?? project.startDate;
    const end = change.endDate ?? project.endDate;
    if (end < start) throw validationFailed([{ path: change.endDate ? 'end_date' : 'start_date', message: `end_date (${end}) must be on or after start_date (${start})` }]);
    if (change.name !== undefined) project.name = change.name;
    if (change.description !== undefined) project.description = change.description;
    if (change.budget !== undefined) project.budget = change.budget;
    project.startDate = start;
    project.endDate = end;
    if (change.status !== undefined) project.status = change.status;
    if (change.milestones !== undefined) project.milestones = change.milestones;
    if (change.metadata !== undefined) project.metadata = change.metadata;
    project.updatedAt = new Date();
    await tx.flush();
    // A lower budget may put the project over it now.
    if (change.budget !== undefined) await noteBudget(tx, scope, id, requestId);
    await tx.refresh(project);
    return projectView(project);
  });
}

/** The Project analytics resource (formulas in domain/erp/accounting.ts and docs/erp.md). */
export async function getProjectAnalytics(em: EntityManager, scope: Scope, id: string, asOf: string): Promise<ProjectAnalyticsView> {
  const project = await findProject(em, id);
  const { spent, revenue } = await projectTotals(em, scope, id, asOf);
  const figures = projectAnalytics({
    budget: project.budget, spent, revenue, startDate: project.startDate, endDate: project.endDate, asOf,
    milestones: project.milestones, status: project.status,
  });
  const money = (minor: number) => toMajorNumber(minor, project.currency);
  return {
    object: 'project_analytics', project_id: project.id, status: project.status, currency: project.currency, as_of: asOf,
    budget: money(project.budget), spent: money(spent), remaining: money(figures.remaining), revenue: money(revenue),
    profitability: { margin_percent: figures.marginPercent, projected_profit: money(figures.projectedProfit) },
    timeline: { start_date: project.startDate, end_date: project.endDate, completion_percent: figures.completionPercent },
  };
}
