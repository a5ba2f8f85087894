import type { Response } from 'express';
import type { Scope } from '../../domain/scope.ts';

export type Format = 'json' | 'xml';

export interface AuthContext extends Scope {
  keyId: string;
  keyType: 'live' | 'test' | 'restricted';
  permissions: string[];
  tier: 'standard' | 'premium';
  /** Admitted with an OAuth access token (keyId is then the client's id): the permissions are its scopes. */
  oauth?: true;
}

/** Per-request state the pipeline steps share, kept on `res.locals`. */
export interface RequestState {
  requestId: string;
  startedAt: bigint;
  format: Format;
  /** The Accept header admits no JSON or XML, only a binary type some route answers (checked once the route is known). */
  binaryOnly?: boolean;
  /** The matched route's template (`/v3/payments/{payment_id}/status`), for metrics and the trace. */
  route?: string;
  auth?: AuthContext;
  /** Set by the idempotency step when it claimed the request's Idempotency-Key. */
  idempotencyKey?: string;
  /** Set by the idempotency step: persists the response before it is written. */
  beforeSend?: (status: number, headers: Record<string, string>, body: Buffer) => Promise<void>;
  /** Set by admission: gives the concurrency slot back (before the response is written). */
  release?: () => Promise<void>;
  /** The problem document answered, if any (kept in the request log for the dashboard). */
  problem?: Record<string, unknown>;
}

export function state(res: Response): RequestState {
  return res.locals as RequestState;
}
