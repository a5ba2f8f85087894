import { createRewardsActivities } from '../../activities/rewards/index.ts';
import { rewardsAdminRouter } from '../../api/admin/rewards/router.ts';
import { rewardsRoutes } from '../../api/v3/rewards/routes.ts';
import { Migration0060RewardsLedger } from '../../db/migrations/0060-rewards-ledger.ts';
import { defineArea } from '../../platform/area.ts';
import { rewardsOrderConsumer } from './consumer.ts';
import {
  LoyaltyAccount, LoyaltyAdminAction, LoyaltyGrant, LoyaltyLedgerEntry, LoyaltyProgram, LoyaltyRedemption, LoyaltyReward,
} from './entities.ts';
import { rewardsEvents } from './events.ts';

/**
 * Rewards and loyalty: a points ledger of grants (pending through the return window, expiring
 * earliest first), tiers with an anniversary downgrade, a rewards catalog and atomic redemption,
 * under /v3/rewards and /v3/loyalty. Paid orders earn and refunds or cancellations reverse through
 * the outbox; one workflow per customer holds the timers.
 */
export const rewardsArea = defineArea({
  name: 'rewards',
  permissions: ['rewards'],
  routes: rewardsRoutes,
  workflows: new URL('../../workflows/rewards/index.ts', import.meta.url),
  activities: createRewardsActivities,
  entities: [LoyaltyProgram, LoyaltyReward, LoyaltyAccount, LoyaltyGrant, LoyaltyLedgerEntry, LoyaltyRedemption, LoyaltyAdminAction],
  migrations: [{ name: '0060-rewards-ledger', class: Migration0060RewardsLedger }],
  events: rewardsEvents,
  consumers: [rewardsOrderConsumer],
  admin: { rewards: rewardsAdminRouter },
});
