import { GraphQLError } from 'graphql/index.js';
import { z } from 'zod';
import { ApiError } from '../../../platform/errors.ts';
import type { Scope } from '../../scope.ts';
import { stockChangeSchema, type StockChangeView } from '../../warehouses/public.ts';
import { builder } from '../builder.ts';
import { requirePermission, type StockFeed } from '../context.ts';
import { objectTypeFrom } from '../from-zod.ts';
import { validInput } from '../input.ts';

export const StockChangeRef = objectTypeFrom<StockChangeView>('StockChange', stockChangeSchema, 'A committed stock change (warehouses:read): the level after it and the deltas, as the realtime WebSocket\'s stock_changed message.');

/** Changes waiting for a subscriber that does not read; beyond it the subscription ends with `slow_consumer`. */
export const MAX_QUEUED_CHANGES = 1000;

const filters = z.strictObject({
  warehouses: z.array(z.string().min(1).max(64)).max(1000).nullable(),
  skus: z.array(z.string().min(1).max(64)).max(1000).nullable(),
});

/**
 * The changes a subscription sends, as an async iterator over the feed: subscribed before it is
 * returned (so a change committed once the response has started is never missed), unsubscribed
 * when the client goes away (`return`), ended when the server shuts down, and bounded (a
 * subscriber that does not read is ended).
 */
async function changes(feed: StockFeed, scope: Scope, filter: z.output<typeof filters>): Promise<AsyncIterableIterator<StockChangeView>> {
  const queue: StockChangeView[] = [];
  let wake: (() => void) | null = null;
  let overflow = false;
  let done = false;
  const unsubscribe = await feed.subscribe(scope, filter, (change) => {
    if (queue.length >= MAX_QUEUED_CHANGES) overflow = true;
    else queue.push(change);
    wake?.();
  }, () => close());
  // The server shutting down ends the stream (`complete`): the client reconnects to another replica.
  const close = () => {
    done = true;
    unsubscribe();
    wake?.();
  };
  const iterator: AsyncIterableIterator<StockChangeView> = {
    [Symbol.asyncIterator]: () => iterator,
    async next(): Promise<IteratorResult<StockChangeView>> {
      for (;;) {
        const change = queue.shift();
        if (change) return { done: false, value: change };
        if (done) return { done: true, value: undefined };
        if (overflow) {
          close();
          throw new GraphQLError(`More than ${MAX_QUEUED_CHANGES} changes were waiting to be read; the subscription ended.`, {
            extensions: { code: 'slow_consumer', status: 429, suggestion: 'Read the stream faster or subscribe to fewer warehouses and SKUs, re-read the stock, then subscribe again.' },
          });
        }
        await new Promise<void>((resolve) => (wake = resolve));
        wake = null;
      }
    },
    async return(): Promise<IteratorResult<StockChangeView>> {
      close();
      return { done: true, value: undefined };
    },
  };
  return iterator;
}

builder.subscriptionField('inventoryChanged', (t) => t.field({
  type: StockChangeRef,
  description: 'Every committed stock change of the key\'s account and mode (warehouses:read), as the realtime WebSocket /v3/inventory/realtime sends it: '
    + 'in these warehouses and of these SKUs (each list optional: omitted = all; at most 1,000 ids each). Over server-sent events: POST /v3/graphql with Accept: text/event-stream.',
  args: { warehouses: t.arg.stringList(), skus: t.arg.stringList() },
  subscribe: async (_root, args, ctx) => {
    requirePermission(ctx, 'warehouses:read');
    const filter = validInput(filters, { warehouses: args.warehouses ?? null, skus: args.skus ?? null });
    if (!ctx.stockFeed) {
      throw new ApiError({ status: 503, code: 'service_unavailable', title: 'Service Unavailable', detail: 'This process serves no realtime stock feed.', suggestion: 'Retry; another replica answers.' });
    }
    return changes(ctx.stockFeed, ctx.caller, filter);
  },
  resolve: (change) => change,
}));
