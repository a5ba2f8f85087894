import { createCommunicationsActivities } from '../../activities/communications/index.ts';
import { communicationsAdminRouter } from '../../api/admin/communications/router.ts';
import { communicationsRoutes } from '../../api/v3/communications/routes.ts';
import { nativePool } from '../../db/pool.ts';
import { Migration0050Communications } from '../../db/migrations/0050-communications.ts';
import { Migration0051CommunicationsCallExtension } from '../../db/migrations/0051-communications-call-extension.ts';
import { Migration0165CallsByNumber } from '../../db/migrations/0165-calls-by-number.ts';
import { Migration0174CommunicationsCallsByStatus } from '../../db/migrations/0174-communications-calls-by-status.ts';
import { defineArea } from '../../platform/area.ts';
import {
  Call, CallLeg, CallRate, CommsAddress, CommsAdminAction, CommsMessage, InboundMessage, Pbx, PbxExtension, PhoneNumber,
} from './entities.ts';
import { communicationsEvents } from './events.ts';
import { createTelephony, type Telephony } from './telephony/index.ts';

declare module '../../platform/services.ts' {
  interface AreaServices {
    /** The telephony carriers (the sandbox in test mode), built once per process. */
    telephony: Telephony;
  }
}

/**
 * Communications: calls over a telephony adapter (one workflow per call), phone numbers, PBX
 * extensions, call analytics, and messages through messaging apps (one workflow per message).
 */
export const communicationsArea = defineArea({
  name: 'communications',
  permissions: ['communications'],
  routes: communicationsRoutes,
  workflows: new URL('../../workflows/communications/index.ts', import.meta.url),
  activities: createCommunicationsActivities,
  entities: [PhoneNumber, CommsAddress, CallRate, Call, CallLeg, Pbx, PbxExtension, CommsMessage, InboundMessage, CommsAdminAction],
  migrations: [
    { name: '0050-communications', class: Migration0050Communications },
    { name: '0051-communications-call-extension', class: Migration0051CommunicationsCallExtension },
    { name: '0165-calls-by-number', class: Migration0165CallsByNumber },
    { name: '0174-communications-calls-by-status', class: Migration0174CommunicationsCallsByStatus },
  ],
  events: communicationsEvents,
  services: ({ orm }) => ({ telephony: createTelephony(() => nativePool(orm)) }),
  admin: { communications: communicationsAdminRouter },
});
