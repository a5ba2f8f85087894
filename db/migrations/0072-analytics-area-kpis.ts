import { Migration } from '@mikro-orm/migrations';

/**
 * The views through which the KPIs of the other areas read their data (docs/analytics.md, "KPIs"),
 * in the pattern of migration 0070: read-only, the one place that knows those areas' columns, and
 * each with the index its aggregate needs (owned here: only analytics reads by these columns).
 *
 * - `analytics_shipments`: deliveries (shipping) and the delivery date promised when the label was
 *   bought (`original_estimated_delivery`), for `on_time_delivery_rate`;
 * - `analytics_stock_movements`: every change of on-hand stock (warehouses' trigger on
 *   `inventory_levels`), for `inventory_turnover`;
 * - `analytics_calls`: calls (communications), for `average_call_duration`;
 * - `analytics_points`: points earned (grants, net of reversals) and redeemed (rewards), for
 *   `points_redemption_rate`.
 */
export class Migration0072AnalyticsAreaKpis extends Migration {
  override name = '0072-analytics-area-kpis';

  override up(): void {
    this.addSql(`
      create index analytics_shipments_delivered on shipping_shipments (account_id, livemode, delivered_at) where delivered_at is not null;
      create index analytics_stock_movements_time on stock_movements (account_id, livemode, created_at);
      create index analytics_loyalty_grants_awarded on loyalty_grants (account_id, livemode, awarded_at);
      create index analytics_loyalty_redemptions_created on loyalty_redemptions (account_id, livemode, created_at);

      create view analytics_shipments as
        select account_id, livemode, id, order_id, status, delivered_at, original_estimated_delivery, created_at
          from shipping_shipments;

      create view analytics_stock_movements as
        select account_id, livemode, warehouse_id, sku, quantity_after - quantity_before as change, reason, created_at
          from stock_movements;

      create view analytics_calls as
        select account_id, livemode, id, status, duration, answered_at, ended_at, created_at
          from comm_calls;

      create view analytics_points as
        select account_id, livemode, 'earned'::text as kind, points - reversed_points as points, awarded_at as at
          from loyalty_grants
        union all
        select account_id, livemode, 'redeemed', points_used, created_at
          from loyalty_redemptions;
    `);
  }

  override down(): void {
    this.addSql(`
      drop view if exists analytics_points, analytics_calls, analytics_stock_movements, analytics_shipments;
      drop index if exists analytics_shipments_delivered, analytics_stock_movements_time, analytics_loyalty_grants_awarded,
        analytics_loyalty_redemptions_created;
    `);
  }
}
