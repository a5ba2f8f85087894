import { createHash } from 'node:crypto';
import type { Pool } from 'pg';

/**
 * How a purchase order reaches a vendor (EDI, a supplier portal, e-mail): one call that the vendor
 * acknowledges with its own order reference. Idempotent on `idempotencyKey`: a retried call (a worker
 * that died mid-call) gets the first acknowledgement back, and the vendor books the order once.
 */
export interface PurchaseOrderRequest {
  idempotencyKey: string;
  vendorId: string;
  vendorEmail: string | null;
  orderId: string;
  currency: string;
  total: number;
  lines: { sku: string | null; description: string | null; quantity: number; unit_price: number }[];
}

export interface PurchaseOrderAcknowledgement {
  reference: string;
}

export interface VendorAdapter {
  sendPurchaseOrder(req: PurchaseOrderRequest): Promise<PurchaseOrderAcknowledgement>;
}

/** The vendor refused the order for good (retrying cannot help). */
export class VendorRejectedError extends Error {
  override name = 'VendorRejectedError';
}

/** The vendor could not be reached (retry later). */
export class VendorUnavailableError extends Error {
  override name = 'VendorUnavailableError';
}

/**
 * The sandbox vendor: plays a vendor's order desk, deterministically, chosen by a tag in the
 * vendor's e-mail address (like a payment gateway's test cards; docs/erp.md lists them):
 *
 * | e-mail                        | behaviour                                                       |
 * |-------------------------------|-----------------------------------------------------------------|
 * | anything else                 | acknowledged at once, reference `SVO-…`                          |
 * | `…+unavailable@…`             | unreachable for the first 2 attempts, then acknowledged          |
 * | `…+reject@…`                  | refuses the order (the purchase order is cancelled)              |
 * | `…+down@…`                    | never reachable (retried, then the order is cancelled)           |
 *
 * It keeps its own table (`sandbox_vendor_orders`), as an outside system would.
 */
export class SandboxVendor implements VendorAdapter {
  readonly #pool: () => Promise<Pool>;

  constructor(pool: () => Promise<Pool>) {
    this.#pool = pool;
  }

  async sendPurchaseOrder(req: PurchaseOrderRequest): Promise<PurchaseOrderAcknowledgement> {
    const tag = /\+([a-z]+)@/.exec(req.vendorEmail ?? '')?.[1] ?? null;
    const pool = await this.#pool();
    const reference = `SVO-${createHash('sha256').update(req.idempotencyKey).digest('hex').slice(0, 12).toUpperCase()}`;
    const { rows } = await pool.query<{ status: string; reference: string | null; attempts: number }>(
      `insert into sandbox_vendor_orders (idempotency_key, vendor_id, purchase_order_id, reference, status, attempts)
       values ($1, $2, $3, null, 'unavailable', 1)
       on conflict (idempotency_key) do update set attempts = sandbox_vendor_orders.attempts + 1
       returning status, reference, attempts`,
      [req.idempotencyKey, req.vendorId, req.orderId],
    );
    const row = rows[0]!;
    if (row.status === 'acknowledged') return { reference: row.reference! };
    if (row.status === 'rejected') throw new VendorRejectedError('The vendor declined the purchase order (sandbox scenario "reject").');
    if (tag === 'down' || (tag === 'unavailable' && row.attempts <= 2)) {
      throw new VendorUnavailableError(`The vendor's order desk is unreachable (sandbox scenario "${tag}", attempt ${row.attempts}).`);
    }
    if (tag === 'reject') {
      await pool.query(`update sandbox_vendor_orders set status = 'rejected' where idempotency_key = $1`, [req.idempotencyKey]);
      throw new VendorRejectedError('The vendor declined the purchase order (sandbox scenario "reject").');
    }
    await pool.query(`update sandbox_vendor_orders set status = 'acknowledged', reference = $2 where idempotency_key = $1`, [req.idempotencyKey, reference]);
    return { reference };
  }
}
