import { readFileSync } from 'node:fs';
import { AutoETS, initSync as initEts } from '@bsull/augurs/ets';
import { MSTL, initSync as initMstl } from '@bsull/augurs/mstl';

/**
 * Revenue forecasting with augurs (Rust, compiled to WASM): MSTL with a weekly season and an
 * AutoETS trend for daily series, AutoETS (no season) for weekly and monthly ones. Prediction
 * intervals at 80 % and 95 % come from the model. The backtest holds out the tail of the history
 * (the horizon, at most a fifth of the history), fits on the rest and reports the MAPE of the
 * held-out points. Pure computation: the route caches the answer per series (forecasting.ts).
 */

let ready = false;
function init(): void {
  if (ready) return;
  initMstl({ module: readFileSync(new URL('mstl_bg.wasm', import.meta.resolve('@bsull/augurs/mstl'))) });
  initEts({ module: readFileSync(new URL('ets_bg.wasm', import.meta.resolve('@bsull/augurs/ets'))) });
  ready = true;
}

export type ForecastModel = 'mstl_ets_weekly' | 'auto_ets';

export interface ForecastResult {
  model: ForecastModel;
  point: number[];
  lower80: number[];
  upper80: number[];
  lower95: number[];
  upper95: number[];
}

export interface Backtest {
  holdout: number;
  /** Mean absolute percentage error on the held-out points with a non-zero actual, in percent; null when all were zero. */
  mape: number | null;
}

/** Daily series: a weekly season needs two full weeks. */
export const MIN_DAILY_POINTS = 14;
export const MIN_COARSE_POINTS = 4;

function modelFor(seasonal: boolean, n: number): ForecastModel {
  return seasonal && n >= MIN_DAILY_POINTS ? 'mstl_ets_weekly' : 'auto_ets';
}

function fitPredict(model: ForecastModel, y: number[], horizon: number): ForecastResult {
  init();
  const make = () => (model === 'mstl_ets_weekly' ? MSTL.ets([7]) : new AutoETS(1, 'ZZN'));
  const m80 = make();
  try {
    m80.fit(y);
    const f80 = m80.predict(horizon, 0.8);
    const f95 = m80.predict(horizon, 0.95);
    const finite = (xs: number[] | undefined, fallback: number[]) => (xs ?? fallback).map((v, i) => (Number.isFinite(v) ? v : fallback[i]!));
    return {
      model,
      point: f80.point,
      lower80: finite(f80.intervals?.lower, f80.point), upper80: finite(f80.intervals?.upper, f80.point),
      lower95: finite(f95.intervals?.lower, f80.point), upper95: finite(f95.intervals?.upper, f80.point),
    };
  } finally {
    m80.free();
  }
}

/** Forecasts `horizon` steps after `y` (minor units per step). */
export function forecastSeries(y: number[], horizon: number, seasonal: boolean): ForecastResult {
  return fitPredict(modelFor(seasonal, y.length), y, horizon);
}

/** MAPE of the model on the held-out tail of `y`. */
export function backtest(y: number[], horizon: number, seasonal: boolean): Backtest {
  const holdout = Math.max(1, Math.min(horizon, Math.floor(y.length / 5)));
  const train = y.slice(0, y.length - holdout);
  const actual = y.slice(y.length - holdout);
  const f = fitPredict(modelFor(seasonal, train.length), train, holdout);
  let sum = 0;
  let n = 0;
  actual.forEach((a, i) => {
    if (a === 0) return;
    sum += Math.abs((a - f.point[i]!) / a);
    n += 1;
  });
  return { holdout, mape: n ? (sum / n) * 100 : null };
}
