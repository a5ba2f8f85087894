import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { conflict, notFound, validationFailed } from '../../platform/errors.ts';
import { newId } from '../../platform/ids.ts';
import { readScopedOr404, scopeColumns, type Scope } from '../scope.ts';
import { CrmTask, type TaskStatus } from './entities.ts';
import { Customer } from '../customers/public.ts';

export interface TaskView {
  id: string;
  object: 'task';
  livemode: boolean;
  customer_id: string | null;
  title: string;
  description: string | null;
  status: TaskStatus;
  priority: 'low' | 'normal' | 'high';
  assignee: string | null;
  due_at: string | null;
  /** The automation rule and event that created it, if one did. */
  rule_id: string | null;
  event_id: string | null;
  completed_at: string | null;
  metadata: Record<string, string>;
  created_at: string;
  updated_at: string;
}

export interface TaskInput {
  title: string;
  description?: string;
  customer_id?: string;
  priority?: 'low' | 'normal' | 'high';
  assignee?: string;
  due_at?: Date;
  metadata?: Record<string, string>;
}

export function taskView(t: CrmTask): TaskView {
  return {
    id: t.id, object: 'task', livemode: t.livemode, customer_id: t.customerId ?? null, title: t.title,
    description: t.description ?? null, status: t.status, priority: t.priority, assignee: t.assignee ?? null,
    due_at: t.dueAt?.toISOString() ?? null, rule_id: t.ruleId ?? null, event_id: t.eventId ?? null,
    completed_at: t.completedAt?.toISOString() ?? null, metadata: t.metadata,
    created_at: t.createdAt.toISOString(), updated_at: t.updatedAt.toISOString(),
  };
}

export async function createTask(em: EntityManager, scope: Scope, input: TaskInput): Promise<TaskView> {
  if (input.customer_id && !(await em.findOne(Customer, { id: input.customer_id }, { fields: ['id'] }))) {
    throw validationFailed([{ path: 'customer_id', message: `no customer '${input.customer_id}' in this account and mode` }]);
  }
  const task = em.create(CrmTask, {
    id: newId('task'), ...scopeColumns(scope), customerId: input.customer_id ?? null, title: input.title,
    description: input.description ?? null, status: 'open', priority: input.priority ?? 'normal', assignee: input.assignee ?? null,
    dueAt: input.due_at ?? null, ruleId: null, eventId: null, sourceKey: null, completedAt: null, metadata: input.metadata ?? {},
  });
  await em.flush();
  return taskView(task);
}

export async function getTask(em: EntityManager, id: string): Promise<TaskView> {
  const task = await em.findOne(CrmTask, { id });
  if (!task) throw notFound('task', id);
  return taskView(task);
}

/** Task by id for GET /v3/crm/tasks/{id}: one prepared statement, no EntityManager (readScopedOr404). */
export async function readTask(orm: MikroORM, scope: Scope, id: string): Promise<TaskView> {
  return taskView(await readScopedOr404(orm, scope, CrmTask, id, 'task'));
}

export async function listTasks(
  em: EntityManager,
  filters: { status?: TaskStatus[]; customer_id?: string[]; rule_id?: string[]; assignee?: string[] },
  page: { where: Record<string, unknown>; direction: 'asc' | 'desc'; limit: number },
): Promise<TaskView[]> {
  const where: Record<string, unknown>[] = [page.where];
  if (filters.status) where.push({ status: { $in: filters.status } });
  if (filters.customer_id) where.push({ customerId: { $in: filters.customer_id } });
  if (filters.rule_id) where.push({ ruleId: { $in: filters.rule_id } });
  if (filters.assignee) where.push({ assignee: { $in: filters.assignee } });
  const rows = await em.find(CrmTask, { $and: where }, { orderBy: { id: page.direction }, limit: page.limit + 1 });
  return rows.map(taskView);
}

/** Completes an open task (one conditional UPDATE: two completions cannot both win). */
export async function completeTask(em: EntityManager, id: string): Promise<TaskView> {
  const task = await em.findOne(CrmTask, { id });
  if (!task) throw notFound('task', id);
  const changed = await em.nativeUpdate(CrmTask, { id, status: 'open' }, { status: 'completed', completedAt: new Date(), updatedAt: new Date() });
  if (!changed) {
    throw conflict('invalid_state_transition', `Task ${id} is already completed.`, 'Nothing to do: the task was completed before.', { current_state: 'completed' });
  }
  em.clear();
  return getTask(em, id);
}
