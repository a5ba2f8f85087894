import { endpointSchema, listEndpoints, type EndpointView } from '../../webhooks/public.ts';
import { builder } from '../builder.ts';
import { requirePermission } from '../context.ts';
import { objectTypeFrom } from '../from-zod.ts';
import { connectionOf, rootPage } from '../pages.ts';

export const WebhookEndpointRef = objectTypeFrom<EndpointView>('WebhookEndpoint', endpointSchema, 'A webhook endpoint (webhooks:read); its signing secret is never shown.', ['secret']);

builder.queryField('webhookEndpoints', (t) => t.connection({
  type: WebhookEndpointRef, nullable: true,
  description: 'Webhook endpoints, newest first.',
  args: { enabled: t.arg.boolean() },
  resolve: async (_root, args, ctx) => {
    requirePermission(ctx, 'webhooks:read');
    const page = rootPage(args);
    return connectionOf(await listEndpoints(ctx.em, { enabled: args.enabled ?? undefined }, page), page.limit);
  },
}));
