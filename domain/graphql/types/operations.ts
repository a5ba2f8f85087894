import { callSchema, listCalls, type CallView } from '../../communications/public.ts';
import { listProjects, PROJECT_STATUSES, projectSchema, type ProjectView } from '../../erp/public.ts';
import { builder } from '../builder.ts';
import { requirePermission } from '../context.ts';
import { enumFrom } from '../enums.ts';
import { objectTypeFrom } from '../from-zod.ts';
import { connectionOf, rootPage } from '../pages.ts';
import { CustomerRef, customerLoader } from './customers.ts';

export const ProjectRef = objectTypeFrom<ProjectView>('Project', projectSchema, 'An ERP project (erp:read); milestones as JSON.');
export const CallRef = objectTypeFrom<CallView>('Call', callSchema, 'A phone call (communications:read); legs and recording as JSON.');
const ProjectStatus = enumFrom('ProjectStatus', PROJECT_STATUSES, 'A project\'s status.');

builder.queryField('projects', (t) => t.connection({
  type: ProjectRef, nullable: true,
  description: 'Projects, newest first; filters as GET /v3/projects.',
  args: { customer_id: t.arg.string(), status: t.arg({ type: [ProjectStatus] }) },
  resolve: async (_root, args, ctx) => {
    requirePermission(ctx, 'erp:read');
    const page = rootPage(args);
    return connectionOf(await listProjects(ctx.em, { customerId: args.customer_id ?? undefined, status: args.status ?? undefined }, page), page.limit);
  },
}));

builder.objectField(ProjectRef, 'customer', (t) => t.field({
  type: CustomerRef, nullable: true, description: 'The customer it is for, if any (crm:read).',
  resolve: (project, _args, ctx) => {
    requirePermission(ctx, 'crm:read');
    return project.customer_id ? customerLoader(ctx).load(project.customer_id) : null;
  },
}));

builder.queryField('calls', (t) => t.connection({
  type: CallRef, nullable: true,
  description: 'Calls, newest first; filters as GET /v3/communications/calls.',
  args: { to_number: t.arg.string(), from_number: t.arg.string() },
  resolve: async (_root, args, ctx) => {
    requirePermission(ctx, 'communications:read');
    const page = rootPage(args);
    return connectionOf(await listCalls(ctx.em, { toNumber: args.to_number ?? undefined, fromNumber: args.from_number ?? undefined }, page), page.limit);
  },
}));
