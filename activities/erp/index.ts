import { ApiError } from '../../platform/errors.ts';
import type { ActivityDeps } from '../../platform/area.ts';
import { postEventToLedger } from '../../domain/erp/postings.ts';
import { orderView, recordBill, recordReceipt, saveOrder, type BillWrite, type ReceiptWrite, type SaveOrder } from '../../domain/erp/procurement-store.ts';
import { ProcurementOrder, Vendor } from '../../domain/erp/entities.ts';
import { VendorRejectedError } from '../../domain/erp/vendor-adapter.ts';
import { scopedEm } from '../../domain/scope.ts';
import { vendorOrderKey, type LedgerPostingInput, type OrderItem, type ProcurementOrderView } from '../../workflows/erp/shared.ts';

export type ErpActivityDeps = Pick<ActivityDeps, 'orm' | 'vendorAdapter'>;

const scopeOf = (r: { accountId: string; livemode: boolean }) => ({ accountId: r.accountId, livemode: r.livemode });

export function createErpActivities({ orm, vendorAdapter }: ErpActivityDeps) {
  return {
    async saveProcurementOrder(save: SaveOrder): Promise<ProcurementOrderView> {
      return saveOrder(scopedEm(orm, scopeOf(save.input)), save);
    },

    async recordProcurementReceipt(write: ReceiptWrite): Promise<string | null> {
      return recordReceipt(scopedEm(orm, scopeOf(write.input)), write);
    },

    async recordProcurementBill(write: BillWrite): Promise<string> {
      return recordBill(scopedEm(orm, scopeOf(write.input)), write);
    },

    async getProcurementOrderView(ref: { accountId: string; livemode: boolean; orderId: string }): Promise<ProcurementOrderView> {
      const em = scopedEm(orm, scopeOf(ref));
      return orderView(await em.findOneOrFail(ProcurementOrder, { id: ref.orderId }));
    },

    /** Sends the order to its vendor (idempotent at the vendor); a refusal is final, an outage is retried. */
    async sendPurchaseOrderToVendor(req: {
      orderId: string; accountId: string; livemode: boolean; vendorId: string; currency: string; total: number; items: OrderItem[];
    }): Promise<{ reference: string }> {
      const em = scopedEm(orm, scopeOf(req));
      const vendor = await em.findOneOrFail(Vendor, { id: req.vendorId });
      try {
        return await vendorAdapter.sendPurchaseOrder({
          idempotencyKey: vendorOrderKey(req.orderId), vendorId: vendor.id, vendorEmail: vendor.email ?? null, orderId: req.orderId,
          currency: req.currency, total: req.total,
          lines: req.items.map((i) => ({ sku: i.sku, description: i.description, quantity: i.quantity, unit_price: i.unit_price })),
        });
      } catch (err) {
        if (err instanceof VendorRejectedError) {
          throw new ApiError({ status: 422, code: 'vendor_rejected', title: 'Vendor Rejected', detail: err.message, suggestion: 'Choose another vendor, or contact this one.' });
        }
        throw err;
      }
    },

    async postEventToLedger(input: LedgerPostingInput): Promise<string | null> {
      return postEventToLedger(scopedEm(orm, scopeOf(input)), input);
    },
  };
}

export type ErpActivities = ReturnType<typeof createErpActivities>;
