import { toMajorNumber } from '../money.ts';
import type { Project } from './entities.ts';
import type { ProjectView } from './schemas.ts';

export function projectView(p: Project): ProjectView {
  return {
    id: p.id, object: 'project', livemode: p.livemode, name: p.name, description: p.description ?? null, customer_id: p.customerId ?? null,
    budget: toMajorNumber(p.budget, p.currency), budget_minor: p.budget, currency: p.currency, start_date: p.startDate, end_date: p.endDate,
    status: p.status, milestones: p.milestones, budget_exceeded_at: p.budgetExceededAt?.toISOString() ?? null, metadata: p.metadata,
    created_at: p.createdAt.toISOString(), updated_at: p.updatedAt.toISOString(),
  };
}
