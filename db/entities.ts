import { Account, ApiKey } from '../domain/accounts/entities.ts';
import { Customer } from '../domain/customers/entities.ts';
import { InventoryLevel, MarketplaceListing, Order, Product, Store, Warehouse } from '../domain/commerce/entities.ts';
import { AutomationRule, AutomationRun, CrmMessage, CrmTask, Interaction, Touchpoint } from '../domain/crm/entities.ts';
import { DomainEvent } from '../domain/events/entities.ts';
import { WebhookDelivery, WebhookDeliveryAttempt, WebhookEndpoint } from '../domain/webhooks/entities.ts';
import { IdempotencyRecord } from '../domain/idempotency/entities.ts';
import { ApiKeyDailyUsage, RequestLog } from '../domain/requests/entities.ts';
import { Payment, PaymentGatewaySetting, PaymentRefund, PaymentTransfer } from '../domain/payments/entities.ts';
import { BillingPlan, Invoice, Subscription, TaxRate, TestClock, UsageRecord } from '../domain/billing/entities.ts';

/** Every entity the ORM knows; each area adds its own here. */
export const entities = [Account, ApiKey, Customer, DomainEvent, IdempotencyRecord, RequestLog, ApiKeyDailyUsage,
  Store, Product, Warehouse, InventoryLevel, Order, MarketplaceListing,
  Interaction, Touchpoint, AutomationRule, AutomationRun, CrmTask, CrmMessage,
  WebhookEndpoint, WebhookDelivery, WebhookDeliveryAttempt,
  Payment, PaymentRefund, PaymentTransfer, PaymentGatewaySetting,
  BillingPlan, TaxRate, TestClock, Subscription, Invoice, UsageRecord,
];
