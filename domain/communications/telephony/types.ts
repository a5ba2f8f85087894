import type { QualitySample } from '../quality.ts';
import type { MessageTemplate, MessagingApp, NumberFeature, NumberType } from '../entities.ts';

/**
 * The telephony adapter: what the platform asks of a carrier (Twilio, Telnyx, an Asterisk trunk).
 * Calls report their progress asynchronously through status callbacks (which real carriers POST to
 * a URL and may send late, twice or out of order); the carrier can also be asked for a call's state,
 * which is how a call whose callbacks were lost still finishes.
 */

/** A leg's status as the carrier reports it. */
export type CarrierCallStatus = 'queued' | 'initiated' | 'ringing' | 'in_progress' | 'completed' | 'busy' | 'no_answer' | 'failed' | 'canceled';

export interface StatusCallback {
  carrierCallId: string;
  callId: string;
  legId: string;
  /** Twilio's status callback events. */
  event: 'initiated' | 'ringing' | 'answered' | 'completed';
  /** With `completed`: how the leg ended. */
  callStatus?: 'completed' | 'busy' | 'no_answer' | 'failed' | 'canceled';
  /** With `completed`: talk time in seconds. */
  duration?: number;
  /** With `completed` after an answer: the per-interval quality samples. */
  quality?: QualitySample[];
  /** The carrier's sequence number of the event within the leg (1…). */
  sequence: number;
}

export interface PlaceCallRequest {
  /** The same on every retry: the carrier places the call once. */
  idempotencyKey: string;
  callId: string;
  legId: string;
  to: string;
  from: string;
  callerIdName: string | null;
  /** Seconds; the carrier gives up on its own a little after it. */
  ringTimeout: number;
  record: boolean;
}

export interface CarrierCallState {
  carrierCallId: string;
  status: CarrierCallStatus;
  duration: number;
  quality: QualitySample[];
  /** The callbacks the carrier has (or would have) sent so far, in order. */
  events: StatusCallback[];
}

export interface NumberSearch {
  numberType: NumberType;
  areaCode?: string | null;
  country?: string | null;
  limit: number;
}

export interface SendMessageRequest {
  idempotencyKey: string;
  app: MessagingApp;
  to: string;
  from: string;
  text: string | null;
  template: MessageTemplate | null;
  mediaUrl: string | null;
}

export type ProviderMessageStatus = 'sent' | 'delivered' | 'read' | 'failed';

export interface TelephonyAdapter {
  readonly name: string;
  /** Real milliseconds per second of call time (1000 on a real carrier; compressed in the sandbox). */
  readonly secondMs: number;
  /** Dials a leg; callbacks go to `deliver` as the call progresses. */
  placeCall(req: PlaceCallRequest, deliver: (cb: StatusCallback) => Promise<void>): Promise<{ carrierCallId: string }>;
  fetchCall(carrierCallId: string): Promise<CarrierCallState>;
  /** Ends the leg (answered: completed; not yet answered: canceled); a finished leg is left as it is. */
  hangUp(carrierCallId: string): Promise<CarrierCallState>;
  /**
   * Cancels a leg that has not been answered (canceled); an answered or finished leg is left as it
   * is and its state returned (Twilio's `Status=canceled`): a ring timeout never cuts off an answer.
   */
  cancel(carrierCallId: string): Promise<CarrierCallState>;
  /** The recording (WAV) of an answered leg that recorded, or null. */
  fetchRecording(carrierCallId: string): Promise<Buffer | null>;
  searchNumbers(search: NumberSearch): Promise<string[]>;
  /** Nearby area codes that have numbers, when `areaCode` has none. */
  nearbyAreaCodes(areaCode: string): string[];
  buyNumber(req: { number: string; features: NumberFeature[]; idempotencyKey: string }): Promise<{ reference: string }>;
  releaseNumber(number: string): Promise<void>;
  sendMessage(req: SendMessageRequest): Promise<{ providerMessageId: string }>;
  fetchMessage(providerMessageId: string): Promise<{ status: ProviderMessageStatus; failureCode: string | null }>;
}

/** The carrier refused the request (retrying cannot help). */
export class CarrierRejectedError extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.name = 'CarrierRejectedError';
    this.code = code;
  }
}
