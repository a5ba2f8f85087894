/**
 * The structured logger (pino): one JSON line per entry on stdout (stderr for warn and error):
 * `{"level":"info","time":"<ISO 8601>", <context>, <fields>, "msg":"…"}`.
 *
 * - Context: inside an API request every line carries `request_id`, and once the key is admitted
 *   `account_id` and `mode`; inside a Temporal activity `workflow_id`, `workflow_type` and
 *   `activity_type` (see `log-context.ts`). A caller's field of the same name wins.
 * - `time`, `level` and `msg` are the logger's: a caller's field with one of those names is written
 *   as `field_time`, `field_level`, `field_msg`.
 * - An Error in a field (any top-level field, usually `error`) is written as `name`, `message`,
 *   `stack` (always: errors are rare and the stack is what one needs), PostgreSQL's `code`,
 *   `detail`, `constraint`, `table`, `column`, `schema` when present, and its `cause` chain (the
 *   same way, at most `MAX_CAUSE_DEPTH` deep).
 * - Secrets are redacted: by field name (authorization, cookie, secret, password, token, api_key,
 *   cvc: text and number values at any depth, any value at the top level and in `REDACT_PATHS`)
 *   and, anywhere in the line, by shape (API key text `bp_live_…`/`bp_test_…`/`bp_rk_…`, webhook
 *   secrets `whsec_…`, `Bearer …` credentials, card numbers: 13 to 19 digits that pass the Luhn
 *   check).
 */
import { multistream, pino, stdTimeFunctions, type Logger as PinoLogger } from 'pino';
import { currentLogContext } from './log-context.ts';
import { currentTraceId } from './telemetry.ts';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent';

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  enabled(level: LogLevel): boolean;
  child(fields: Record<string, unknown>): Logger;
}

/** Where lines go; anything with `write(line)` (a stream, or an in-memory sink in tests). */
export interface LogDestinations {
  out: { write(line: string): unknown };
  err: { write(line: string): unknown };
}

export const REDACTED = '[redacted]';
export const MAX_CAUSE_DEPTH = 5;
const RESERVED = new Set(['time', 'level', 'msg']);
const PG_FIELDS = ['code', 'detail', 'constraint', 'table', 'column', 'schema'] as const;

const SECRET_NAMES = ['authorization', 'cookie', 'secret', 'password', 'token', 'api_key', 'cvc'];
/**
 * Field names whose value is withheld whatever it is (an object too). Fixed paths only: pino's
 * wildcard paths cost ~10 µs a line; deeper secret fields with text or number values are caught
 * on the finished line (`SECRET_FIELD`).
 */
const REDACT_PATHS = [
  ...SECRET_NAMES, 'headers.authorization', 'headers.cookie', 'card.number', 'card.cvc',
  'payment_method.card.number', 'payment_method.card.cvc',
];

export function createLogger(level: LogLevel, base: Record<string, unknown> = {}, destinations?: LogDestinations): Logger {
  const out = destinations?.out ?? process.stdout;
  const err = destinations?.err ?? process.stderr;
  const root = pino({
    level,
    base,
    messageKey: 'msg',
    timestamp: stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
    // Errors are serialized before pino sees them (see `entry`); its own `err` serializer would redo it.
    serializers: { err: (value: unknown) => value },
    redact: { paths: REDACT_PATHS, censor: REDACTED },
    hooks: { streamWrite: scrubSecrets },
  }, multistream([{ level: 'debug', stream: out }, { level: 'warn', stream: err }], { dedupe: true }));
  return wrap(root);
}

function wrap(p: PinoLogger): Logger {
  const log = (lvl: 'debug' | 'info' | 'warn' | 'error') => (msg: string, fields?: Record<string, unknown>): void => {
    if (p.isLevelEnabled(lvl)) p[lvl](entry(fields), msg);
  };
  return {
    debug: log('debug'),
    info: log('info'),
    warn: log('warn'),
    error: log('error'),
    enabled: (lvl) => lvl !== 'silent' && p.isLevelEnabled(lvl),
    child: (fields) => wrap(p.child(fields)),
  };
}

/** The line's fields: the log context, then the caller's (reserved names renamed, errors serialized). */
function entry(fields: Record<string, unknown> | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = { ...currentLogContext() };
  const traceId = currentTraceId();
  if (traceId) out.trace_id = traceId;
  if (!fields) return out;
  for (const key of Object.keys(fields)) {
    const value = fields[key];
    out[RESERVED.has(key) ? `field_${key}` : key] = value instanceof Error ? serializeError(value) : value;
  }
  return out;
}

export function serializeError(error: Error, depth = 0): Record<string, unknown> {
  const out: Record<string, unknown> = { name: error.name, message: error.message };
  const props = error as unknown as Record<string, unknown>;
  for (const f of PG_FIELDS) if (props[f] !== undefined && props[f] !== null) out[f] = props[f];
  out.stack = error.stack;
  if (error.cause !== undefined) {
    out.cause = depth >= MAX_CAUSE_DEPTH ? '[cause chain truncated]'
      : error.cause instanceof Error ? serializeError(error.cause, depth + 1) : error.cause;
  }
  return out;
}

/** A secret field at any depth with a string or number value, as it stands in the JSON line. */
const SECRET_FIELD = new RegExp(String.raw`"(${SECRET_NAMES.join('|')})":(?:"(?:[^"\\]|\\.)*"|-?[\d.eE+-]+)`, 'g');
const KEY_TEXT = /\b(bp_(?:rk_)?(?:live|test)_|whsec_)[A-Za-z0-9+/=]{6,}/g;
const BEARER = /\b(Bearer\s+)[^\s"\\]+/gi;
/**
 * 13 or more digits, single spaces or dashes between them; a bare JSON number whole (sign, fraction,
 * exponent). Not inside a word: the digits of a hex id (a trace id, a hash) are no card number,
 * however Luhn-valid.
 */
const DIGIT_RUN = /(?<![0-9A-Za-z])-?(?:\d+\.)?\d(?:[ -]?\d){12,}(?:\.\d+)?(?:[eE][+-]?\d+)?(?![0-9A-Za-z])/g;

/** Redaction by shape over the finished line (keys and card numbers can hide in any text: a message, an error). */
function scrubSecrets(line: string): string {
  let s = line.replace(SECRET_FIELD, `"$1":"${REDACTED}"`);
  if (s.includes('bp_') || s.includes('whsec_')) s = s.replace(KEY_TEXT, `$1${REDACTED}`);
  if (s.includes('earer')) s = s.replace(BEARER, `$1${REDACTED}`);
  return s.replace(DIGIT_RUN, cardNumber);
}

/**
 * A run of 13 or more digits (single spaces or dashes allowed between them) is redacted when it is,
 * or holds, a 13 to 19 digit Luhn-valid number: a card number followed by more digits is still one.
 * A bare JSON number becomes the string `"[redacted]"`, so the line stays JSON.
 */
function cardNumber(run: string, offset: number, line: string): string {
  const digits = run.replace(/\D/g, '');
  for (let start = 0; start + 13 <= digits.length; start++) {
    for (let len = 13; len <= 19 && start + len <= digits.length; len++) {
      if (luhn(digits.slice(start, start + len))) return insideString(line, offset) ? REDACTED : `"${REDACTED}"`;
    }
  }
  return run;
}

/** Whether `offset` of a JSON line falls inside a string (an odd number of unescaped quotes before it). */
function insideString(line: string, offset: number): boolean {
  let inside = false;
  for (let i = 0; i < offset; i++) {
    if (line[i] === '\\') i++;
    else if (line[i] === '"') inside = !inside;
  }
  return inside;
}

function luhn(digits: string): boolean {
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    let d = digits.charCodeAt(digits.length - 1 - i) - 48;
    if (i % 2 === 1) d = d * 2 > 9 ? d * 2 - 9 : d * 2;
    sum += d;
  }
  return sum % 10 === 0;
}
