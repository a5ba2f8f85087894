/** Business days (Monday to Friday, UTC) and clock times, for transit times, cut-offs and pickups. */

const DAY_MS = 86_400_000;

export function isBusinessDay(d: Date): boolean {
  const wd = d.getUTCDay();
  return wd !== 0 && wd !== 6;
}

/** Midnight UTC of `d`'s day. */
export function startOfDay(d: Date): Date {
  return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate()));
}

/** `n` business days after `d`'s day (n = 0: `d`'s day itself, moved to the next business day if needed). */
export function addBusinessDays(d: Date, n: number): Date {
  let day = startOfDay(d);
  while (!isBusinessDay(day)) day = new Date(day.getTime() + DAY_MS);
  for (let left = n; left > 0;) {
    day = new Date(day.getTime() + DAY_MS);
    if (isBusinessDay(day)) left--;
  }
  return day;
}

/** Minutes after midnight of `HH:MM`. */
export function minutesOf(hhmm: string): number {
  const [h, m] = hhmm.split(':').map(Number);
  return h! * 60 + m!;
}

export function atTime(day: Date, hhmm: string): Date {
  return new Date(startOfDay(day).getTime() + minutesOf(hhmm) * 60_000);
}

/**
 * The day a parcel labelled at `at` leaves: that day when it is a business day before the
 * carrier's cut-off, else the next business day.
 */
export function shipDay(at: Date, cutoff: string): Date {
  const today = startOfDay(at);
  const minutes = at.getUTCHours() * 60 + at.getUTCMinutes();
  if (isBusinessDay(today) && minutes < minutesOf(cutoff)) return today;
  return addBusinessDays(new Date(today.getTime() + DAY_MS), 0);
}

/** Estimated delivery: the end of the delivery day (20:00 UTC), `transitDays` business days after the ship day. */
export function estimatedDelivery(at: Date, cutoff: string, transitDays: number): Date {
  return atTime(addBusinessDays(shipDay(at, cutoff), transitDays), '20:00');
}
