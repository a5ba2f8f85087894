import type { ShippingConfig } from '../config.ts';
import { createEasyPostCarrier } from './easypost.ts';
import { SANDBOX_CARRIERS, createSandboxCarrier } from './sandbox.ts';
import { CarrierError, type CarrierAdapter } from './types.ts';

/** The carrier adapters of a process (an area service): the sandbox carriers, and EasyPost when configured. */
export interface CarrierAdapters {
  readonly config: ShippingConfig;
  /** Every carrier this process knows, by name. */
  readonly all: ReadonlyMap<string, CarrierAdapter>;
  get(name: string): CarrierAdapter;
  /** Carriers a shipment of this mode may use: test mode the sandbox (and EasyPost); live mode real carriers. */
  usable(livemode: boolean): string[];
}

export function createCarrierAdapters(config: ShippingConfig, extra: CarrierAdapter[] = []): CarrierAdapters {
  const down = config.SHIPPING_SANDBOX_DOWN.split(',').map((s) => s.trim()).filter(Boolean);
  const all = new Map<string, CarrierAdapter>();
  for (const table of SANDBOX_CARRIERS) {
    all.set(table.name, createSandboxCarrier(table, { down, ...(config.SHIPPING_SANDBOX_LATENCY_MS !== undefined ? { latencyMs: config.SHIPPING_SANDBOX_LATENCY_MS } : {}) }));
  }
  if (config.EASYPOST_API_KEY) {
    all.set('easypost', createEasyPostCarrier({ apiKey: config.EASYPOST_API_KEY, baseUrl: config.EASYPOST_API_BASE, webhookSecret: config.EASYPOST_WEBHOOK_SECRET }));
  }
  for (const c of extra) all.set(c.name, c);
  return {
    config,
    all,
    get(name) {
      const carrier = all.get(name);
      if (!carrier) throw new CarrierError(name, 'carrier_error', `No carrier named '${name}' is configured on this server.`, { retryable: false });
      return carrier;
    },
    usable(livemode) {
      return [...all.values()].filter((c) => c.kind !== 'sandbox' || !livemode || config.SHIPPING_LIVE_SANDBOX).map((c) => c.name);
    },
  };
}
