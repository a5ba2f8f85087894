/**
 * Pick routes. A location `A-03-2-B` is aisle A, rack (bay) 3, shelf 2, bin B. The layout model (see
 * docs/warehouses.md): parallel aisles 3 m apart, bays 1.5 m wide, a cross-aisle at the front
 * (bay 0) and one behind the last bay; the depot is at the front of aisle A. Between two locations
 * in one aisle the picker walks straight; between aisles they leave by the front or the back,
 * whichever is shorter. Shelf and bin do not change the walk. Locations that do not follow the
 * pattern (or none) are at the depot.
 *
 * A route is found by nearest neighbour from the depot, improved by 2-opt until no exchange shortens
 * it; 2-opt also runs from the bin-order tour and the shorter result wins. Deterministic: ties are
 * broken by location order.
 */

export const AISLE_SPACING_M = 3;
export const BAY_WIDTH_M = 1.5;
export const LOCATION_PATTERN = /^([A-Z]{1,3})-(\d{1,3})-(\d{1,2})(?:-([A-Z0-9]{1,3}))?$/;
export const DEPOT = 'DEPOT';

export interface Point {
  location: string;
  aisle: number;
  x: number;
  y: number;
  order: [number, number, number, string];
}

function aisleIndex(letters: string): number {
  let n = 0;
  for (const c of letters) n = n * 26 + (c.charCodeAt(0) - 64);
  return n - 1;
}

export function parseLocation(location: string | null): Point {
  const m = location ? LOCATION_PATTERN.exec(location) : null;
  if (!m) return { location: location ?? DEPOT, aisle: -1, x: 0, y: 0, order: [-1, 0, 0, location ?? ''] };
  const aisle = aisleIndex(m[1]!);
  const bay = Number(m[2]);
  return { location: location!, aisle, x: aisle * AISLE_SPACING_M, y: bay * BAY_WIDTH_M, order: [aisle, bay, Number(m[3]), m[4] ?? ''] };
}

export function compareLocations(a: Point, b: Point): number {
  for (let i = 0; i < 3; i++) if (a.order[i] !== b.order[i]) return (a.order[i] as number) - (b.order[i] as number);
  return a.order[3] < b.order[3] ? -1 : a.order[3] > b.order[3] ? 1 : a.location < b.location ? -1 : a.location > b.location ? 1 : 0;
}

/** Walking distance in metres between two points of a warehouse whose aisles are `aisleLength` long. */
export function walk(a: Point, b: Point, aisleLength: number): number {
  if (a.aisle === b.aisle && a.aisle >= 0) return Math.abs(a.y - b.y);
  return Math.abs(a.x - b.x) + Math.min(a.y + b.y, 2 * aisleLength - a.y - b.y);
}

export interface PlannedRoute {
  stops: string[];
  distance: number;
  unoptimized_distance: number | null;
  saving_percent: number | null;
}

const round1 = (n: number) => Math.round(n * 10) / 10;

function tourLength(tour: number[], d: number[][]): number {
  let total = 0;
  for (let i = 0; i + 1 < tour.length; i++) total += d[tour[i]!]![tour[i + 1]!]!;
  return total;
}

/** 2-opt on a closed tour whose first and last element is the depot (index 0). */
function twoOpt(start: number[], d: number[][]): number[] {
  const tour = [...start];
  const n = tour.length;
  let improved = true;
  for (let pass = 0; improved && pass < 200; pass++) {
    improved = false;
    for (let i = 1; i < n - 2; i++) {
      for (let j = i + 1; j < n - 1; j++) {
        const a = tour[i - 1]!, b = tour[i]!, c = tour[j]!, e = tour[j + 1]!;
        const delta = d[a]![c]! + d[b]![e]! - d[a]![b]! - d[c]![e]!;
        if (delta < -1e-9) {
          for (let l = i, r = j; l < r; l++, r--) [tour[l], tour[r]] = [tour[r]!, tour[l]!];
          improved = true;
        }
      }
    }
  }
  return tour;
}

/**
 * The route through `locations` (distinct), from and back to the depot. `aisleLength` in metres
 * (at least the furthest bay of the warehouse). Without `optimize`, the bin order.
 */
export function planRoute(locations: (string | null)[], optimize: boolean, aisleLength?: number): PlannedRoute {
  const points = [...new Map(locations.map((l) => [l ?? DEPOT, parseLocation(l)])).values()].sort(compareLocations);
  const length = Math.max(aisleLength ?? 0, ...points.map((p) => p.y + BAY_WIDTH_M));
  const nodes = [parseLocation(null), ...points];
  const d = nodes.map((a) => nodes.map((b) => walk(a, b, length)));
  const binOrder = [0, ...points.map((_p, i) => i + 1), 0];
  const unoptimized = tourLength(binOrder, d);
  if (!optimize) return { stops: points.map((p) => p.location), distance: round1(unoptimized), unoptimized_distance: null, saving_percent: null };

  // Nearest neighbour from the depot (ties: the earlier location in bin order).
  const visited = new Set<number>([0]);
  const nn = [0];
  while (visited.size < nodes.length) {
    const last = nn.at(-1)!;
    let best = -1;
    for (let i = 1; i < nodes.length; i++) if (!visited.has(i) && (best < 0 || d[last]![i]! < d[last]![best]! - 1e-9)) best = i;
    visited.add(best);
    nn.push(best);
  }
  nn.push(0);
  const candidates = [twoOpt(nn, d), twoOpt(binOrder, d)];
  const best = candidates.reduce((a, b) => (tourLength(b, d) < tourLength(a, d) - 1e-9 ? b : a));
  const distance = tourLength(best, d);
  return {
    stops: best.slice(1, -1).map((i) => nodes[i]!.location),
    distance: round1(distance),
    unoptimized_distance: round1(unoptimized),
    saving_percent: unoptimized > 0 ? round1((1 - distance / unoptimized) * 100) : 0,
  };
}
