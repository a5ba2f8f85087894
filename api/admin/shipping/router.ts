import { TRPCError } from '@trpc/server';
import { z } from 'zod';
import {
  describeShipmentWorkflow, findShipmentAnywhere, searchShipmentWorkflows, steerShipment,
} from '../../../domain/shipping/admin.ts';
import { setCarrierSetting } from '../../../domain/shipping/shipments.ts';
import { scopedEm } from '../../../domain/scope.ts';
import { adminProcedure, router, type AdminContext } from '../trpc.ts';

const shipmentRef = z.object({ accountId: z.string().min(1), livemode: z.boolean(), shipmentId: z.string().min(1) });

function temporalOf(ctx: AdminContext) {
  if (!ctx.temporal) throw new TRPCError({ code: 'SERVICE_UNAVAILABLE', message: 'This admin API has no Temporal connection.' });
  return ctx.temporal;
}

function workflowContext(ctx: AdminContext, input: z.infer<typeof shipmentRef>) {
  return { em: scopedEm(ctx.orm, { accountId: input.accountId, livemode: input.livemode }), temporal: temporalOf(ctx) };
}

const steerInput = shipmentRef.extend({
  operator: z.string().trim().min(1).max(100).describe('Who is acting (recorded).'),
  reason: z.string().trim().min(3).max(500).describe('Why (recorded).'),
});

/** Admin: find shipments, read their workflow's live state, steer them (each action recorded with operator and reason). */
export const shippingAdminRouter = router({
  findShipment: adminProcedure
    .input(z.object({ shipmentId: z.string().min(1).optional(), trackingNumber: z.string().min(1).optional() })
      .refine((v) => v.shipmentId || v.trackingNumber, 'give shipmentId or trackingNumber'))
    .query(({ ctx, input }) => findShipmentAnywhere(ctx.orm.em.fork(), input)),
  searchWorkflows: adminProcedure
    .input(z.object({ accountId: z.string().optional(), customerId: z.string().optional(), resourceId: z.string().optional(), status: z.string().optional() }))
    .query(({ ctx, input }) => searchShipmentWorkflows(temporalOf(ctx), input)),
  describeShipment: adminProcedure
    .input(shipmentRef)
    .query(({ ctx, input }) => describeShipmentWorkflow(workflowContext(ctx, input), input, input.shipmentId)),
  repoll: adminProcedure
    .input(steerInput)
    .mutation(({ ctx, input }) => steerShipment(workflowContext(ctx, input), input.shipmentId, { action: 'repoll', operator: input.operator, reason: input.reason })),
  markDelivered: adminProcedure
    .input(steerInput)
    .mutation(({ ctx, input }) => steerShipment(workflowContext(ctx, input), input.shipmentId, { action: 'mark_delivered', operator: input.operator, reason: input.reason })),
  markException: adminProcedure
    .input(steerInput)
    .mutation(({ ctx, input }) => steerShipment(workflowContext(ctx, input), input.shipmentId, { action: 'mark_exception', operator: input.operator, reason: input.reason })),
  setCarriers: adminProcedure
    .input(z.object({
      accountId: z.string().min(1), livemode: z.boolean(),
      defaultCarrier: z.string().min(1).nullable(), enabledCarriers: z.array(z.string().min(1)).nullable(),
    }))
    .mutation(async ({ ctx, input }) => {
      await setCarrierSetting(ctx.orm.em.fork(), input.accountId, input.livemode, { defaultCarrier: input.defaultCarrier, enabledCarriers: input.enabledCarriers });
      return { account_id: input.accountId, livemode: input.livemode, default_carrier: input.defaultCarrier, enabled_carriers: input.enabledCarriers };
    }),
});
