/**
 * Call quality: a MOS (mean opinion score, 1–4.5) from the carrier's quality samples, with a
 * simplified ITU-T G.107 E-model (after Cole & Rosenbluth, "Voice over IP performance monitoring",
 * 2001), for G.711 with packet-loss concealment:
 *
 *   effective delay d = average latency + 2 × average jitter + 10 ms (codec)
 *   Id  = 0.024·d + 0.11·(d − 177.3)·H(d − 177.3)              (delay impairment; H = step function)
 *   Ie  = 0 + (95 − 0)·P / (P + 25.1)                          (equipment impairment; P = loss in %, Bpl = 25.1)
 *   R   = 93.2 − Id − Ie                                       (all other G.107 factors at their defaults)
 *   MOS = 1 + 0.035·R + 7·10⁻⁶·R·(R − 60)·(100 − R), clamped to [1, 4.5]
 *
 * Simplifications: the defaults of G.107 for the signal-to-noise and simultaneous impairments
 * (R0 − Is = 93.2), no advantage factor, and the delay term's closed-form approximation.
 */
export interface QualitySample {
  jitter_ms: number;
  packet_loss: number;
  latency_ms: number;
}

export interface CallQuality {
  mos: number;
  jitter: number;
  packet_loss: number;
  latency: number;
}

export function rFactor(latencyMs: number, jitterMs: number, lossPercent: number): number {
  const d = latencyMs + 2 * jitterMs + 10;
  const id = 0.024 * d + (d > 177.3 ? 0.11 * (d - 177.3) : 0);
  const ie = (95 * lossPercent) / (lossPercent + 25.1);
  return 93.2 - id - ie;
}

export function mosFromR(r: number): number {
  if (r <= 0) return 1;
  if (r >= 100) return 4.5;
  return Math.min(4.5, Math.max(1, 1 + 0.035 * r + 7e-6 * r * (r - 60) * (100 - r)));
}

const round = (n: number, places: number) => Math.round(n * 10 ** places) / 10 ** places;

/** The call's quality from its samples (averages), or null when there were none (never answered). */
export function callQuality(samples: readonly QualitySample[]): CallQuality | null {
  if (samples.length === 0) return null;
  const avg = (f: (s: QualitySample) => number) => samples.reduce((sum, s) => sum + f(s), 0) / samples.length;
  const jitter = avg((s) => s.jitter_ms);
  const loss = avg((s) => s.packet_loss);
  const latency = avg((s) => s.latency_ms);
  return { mos: round(mosFromR(rFactor(latency, jitter, loss)), 2), jitter: round(jitter, 2), packet_loss: round(loss, 3), latency: round(latency, 2) };
}
