import type { Request, Response } from 'express';
import { createHash } from 'node:crypto';
import type { IdempotencyStore } from '../../domain/idempotency/store.ts';
import { ApiError } from '../../platform/errors.ts';
import { state, type AuthContext } from './context.ts';
import { writeRaw } from './send.ts';
import { idempotencyOutcomes } from '../../platform/metrics.ts';

const CLAIM_OUTCOME = { claimed: 'claimed', replay: 'replayed', in_progress: 'in_use', mismatch: 'reused' } as const;

const MAX_KEY_LENGTH = 255;
/** Response headers worth replaying besides the body's content type. */
const REPLAYED_HEADERS = ['content-type', 'location'];
/**
 * A replay answers with the original request's `Request-Id`: the stored body (a problem document's
 * `request_id`) names it, and the header must equal it. `Idempotent-Replayed: true` tells them apart.
 */
const REQUEST_ID = 'Request-Id';

/**
 * The Idempotency-Key step. Returns true when the request was answered here (a replay); else it
 * arranges for the response to be stored before it is sent (4xx included, so a retried invalid
 * request gets the same answer) or for the claim to be dropped on a 5xx, so a retry runs again.
 */
export async function applyIdempotency(
  store: IdempotencyStore, req: Request, res: Response, auth: AuthContext, rawBody: Buffer,
): Promise<boolean> {
  const key = req.headers['idempotency-key'];
  if (key === undefined) return false;
  if (typeof key !== 'string' || key.length === 0 || key.length > MAX_KEY_LENGTH) {
    throw new ApiError({
      status: 400, code: 'idempotency_key_invalid', title: 'Bad Request',
      detail: `The Idempotency-Key header must be 1 to ${MAX_KEY_LENGTH} characters.`,
      suggestion: 'Use a UUID (v4) per logical operation as the Idempotency-Key.',
    });
  }
  const fingerprint = createHash('sha256').update(`${req.method} ${req.originalUrl}\n`).update(rawBody).digest('hex');
  const claim = await store.claim(auth, key, fingerprint);
  idempotencyOutcomes.inc({ outcome: CLAIM_OUTCOME[claim.kind] });
  switch (claim.kind) {
    case 'mismatch':
      throw new ApiError({
        status: 422, code: 'idempotency_key_reused', title: 'Idempotency Key Reused',
        detail: 'This Idempotency-Key was already used with a different request (method, path or body).',
        suggestion: 'Use a new Idempotency-Key for a new request; reuse a key only to retry the exact same request.',
      });
    case 'in_progress':
      throw new ApiError({
        status: 409, code: 'idempotency_key_in_use', title: 'Conflict',
        detail: 'A request with this Idempotency-Key is still being processed.',
        suggestion: 'Wait a moment and retry with the same key to receive the original response.',
        headers: { 'Retry-After': '1' },
      });
    case 'replay':
      await state(res).release?.();
      writeRaw(res, claim.status, { ...claim.headers, 'Idempotent-Replayed': 'true' }, claim.body);
      return true;
    case 'claimed': {
      const st = state(res);
      st.idempotencyKey = key;
      st.beforeSend = async (status, headers, body) => {
        // A failure on our side (a 503 while a dependency is down included) frees the key at once,
        // so the client's retry runs; if the database cannot be told now, the store keeps trying.
        if (status >= 500) return store.releaseSoon(auth, key);
        const kept = Object.fromEntries(Object.entries(headers).filter(([h]) => REPLAYED_HEADERS.includes(h.toLowerCase())));
        kept[REQUEST_ID] = st.requestId;
        await store.complete(auth, key, status, kept, body);
      };
      // A client that disconnects does not free the key: the work may still complete, and its
      // response is stored for the retry. A process that dies frees it at once (its liveness lock
      // goes with its connection; see IdempotencyStore.claim).
      return false;
    }
  }
}
