import { Migration } from '@mikro-orm/migrations';

/**
 * Several dispatcher passes at once (issue #21, domain/events/dispatch.ts): a pass claims the
 * undispatched events it takes (`for no key update skip locked`, so two passes never take the same
 * event) by stamping them with its claim id and a lease, which it renews while it runs. A pass that
 * dies leaves its claim to expire; the next pass after that takes the events again. Marking an
 * event dispatched clears its claim.
 */
export class Migration0135EventDispatchClaims extends Migration {
  override name = '0135-event-dispatch-claims';

  override up(): void {
    this.addSql(`
      alter table events add column dispatch_claim text null;
      alter table events add column dispatch_claimed_until timestamptz null;
    `);
  }

  override down(): void {
    this.addSql(`
      alter table events drop column dispatch_claimed_until;
      alter table events drop column dispatch_claim;
    `);
  }
}
