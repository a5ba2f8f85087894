import { allHandlersFinished, condition, proxyActivities, proxyLocalActivities, setHandler, sleep } from '@temporalio/workflow';
import type { CommunicationsActivities } from '../../activities/communications/index.ts';
import { REFUSALS, refuse } from '../kit/failures.ts';
import { recordStatus } from '../kit/search-attributes.ts';
import { CARRIER_STEPS, DB_STEPS, awaitMessageAcceptedUpdate, messageStateQuery, type MessageView, type MessageWorkflowInput } from './shared.ts';

const db = proxyActivities<CommunicationsActivities>(DB_STEPS);
const provider = proxyActivities<CommunicationsActivities>(CARRIER_STEPS);
/** Recording the message is what the request waits for: a local activity (no task-queue round trip). */
const first = proxyLocalActivities<CommunicationsActivities>({ ...DB_STEPS, localRetryThreshold: '10 seconds' });

/** Receipts are followed for this many message-time seconds at most (a recipient may never read it). */
const FOLLOW_SECONDS = 24 * 3600;

/**
 * One message (`message-cmsg_…`): record it (`accepted`), hand it to the messaging provider
 * (`sent`), then follow its receipts (`delivered`, `read`, or `failed`), recording
 * `message.delivered` and `message.failed`. Polls the provider with a backoff, in the provider's
 * (compressed, in the sandbox) time.
 */
export async function messageWorkflow(input: MessageWorkflowInput): Promise<MessageView> {
  let view: MessageView | undefined;
  let rejected: ReturnType<typeof refuse> | undefined;
  let polls = 0;
  setHandler(awaitMessageAcceptedUpdate, async () => {
    await condition(() => view !== undefined || rejected !== undefined);
    if (rejected) throw rejected;
    return view!;
  });
  setHandler(messageStateQuery, () => ({ status: view?.status ?? 'accepted', polls }));

  let secondMs: number;
  try {
    const recorded = await first.recordMessage(input);
    view = recorded.view;
    secondMs = recorded.secondMs;
  } catch (err) {
    rejected = refuse(REFUSALS.rejected, 'The message could not be recorded.', { cause: String(err) });
    await condition(allHandlersFinished);
    throw rejected;
  }

  const ref = { messageId: input.messageId, accountId: input.accountId, livemode: input.livemode, requestId: input.requestId };
  try {
    view = await provider.sendMessageToProvider(ref);
  } catch (err) {
    view = await db.recordMessageStatus({ ...ref, status: 'failed', failureCode: 'provider_error', failureMessage: String(err) });
  }
  recordStatus(view.status);
  let waitSeconds = 1;
  const started = Date.now();
  while (view.status !== 'read' && view.status !== 'failed' && Date.now() - started < FOLLOW_SECONDS * secondMs) {
    await sleep(waitSeconds * secondMs);
    waitSeconds = Math.min(waitSeconds * 2, 600);
    polls++;
    view = await provider.pollMessage(ref);
    recordStatus(view.status);
  }
  await condition(allHandlersFinished);
  return view;
}
