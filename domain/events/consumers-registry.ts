import { webhookConsumer } from '../webhooks/consumer.ts';
import { orderWorkflowConsumer } from '../commerce/order-process.ts';
import { crmAutomationConsumer } from '../crm/automation.ts';
import type { EventConsumer } from './consumers.ts';

/**
 * Every consumer of the outbox, asked about each event by the dispatcher (domain/events/dispatch.ts).
 * An area adds its consumer here with one line.
 */
export const eventConsumers: EventConsumer[] = [webhookConsumer, orderWorkflowConsumer, crmAutomationConsumer];
