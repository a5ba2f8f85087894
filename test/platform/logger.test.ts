import { describe, expect, it } from 'vitest';
import { addLogContext, withLogContext } from '../../platform/log-context.ts';
import { createLogger, MAX_CAUSE_DEPTH, REDACTED, type LogLevel } from '../../platform/logger.ts';

/** A logger writing to memory: `out` (stdout) and `err` (stderr) lines, raw and parsed. */
function memoryLogger(level: LogLevel = 'debug', base: Record<string, unknown> = {}) {
  const out: string[] = [];
  const err: string[] = [];
  const logger = createLogger(level, base, { out: { write: (l: string) => out.push(l) }, err: { write: (l: string) => err.push(l) } });
  const parse = (lines: string[]) => lines.map((l) => JSON.parse(l) as Record<string, any>);
  return { logger, out, err, lines: () => [...parse(out), ...parse(err)], raw: () => [...out, ...err].join('') };
}

describe('createLogger', () => {
  it('writes one JSON line per entry: level, ISO time, base fields, caller fields, msg', () => {
    const { logger, out } = memoryLogger('debug', { service: 'api' });
    logger.info('order created', { order_id: 'ord_1', amount: 1200, tags: ['a'] });
    expect(out).toHaveLength(1);
    expect(out[0]!.endsWith('\n')).toBe(true);
    expect(out[0]!.trim()).not.toContain('\n');
    const line = JSON.parse(out[0]!);
    expect(line).toEqual({
      level: 'info', time: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/), service: 'api',
      order_id: 'ord_1', amount: 1200, tags: ['a'], msg: 'order created',
    });
    expect(Math.abs(Date.parse(line.time) - Date.now())).toBeLessThan(5000);
  });

  it('sends debug and info to stdout, warn and error to stderr', () => {
    const { logger, out, err } = memoryLogger('debug');
    logger.debug('d');
    logger.info('i');
    logger.warn('w');
    logger.error('e');
    expect(out.map((l) => JSON.parse(l).msg)).toEqual(['d', 'i']);
    expect(err.map((l) => JSON.parse(l).msg)).toEqual(['w', 'e']);
    expect(err.map((l) => JSON.parse(l).level)).toEqual(['warn', 'error']);
  });

  it('writes nothing below its level, and nothing at all when silent', () => {
    const warn = memoryLogger('warn');
    warn.logger.debug('d');
    warn.logger.info('i');
    warn.logger.warn('w');
    expect(warn.lines().map((l) => l.msg)).toEqual(['w']);
    expect([warn.logger.enabled('debug'), warn.logger.enabled('info'), warn.logger.enabled('warn'), warn.logger.enabled('error')])
      .toEqual([false, false, true, true]);

    const silent = memoryLogger('silent');
    silent.logger.error('e');
    expect(silent.raw()).toBe('');
    expect(silent.logger.enabled('error')).toBe(false);
  });

  it('child loggers add their fields to every line and keep the level', () => {
    const { logger, lines } = memoryLogger('info', { service: 'worker' });
    const child = logger.child({ area: 'payments' });
    child.debug('hidden');
    child.info('shown', { n: 1 });
    expect(lines()).toEqual([expect.objectContaining({ service: 'worker', area: 'payments', n: 1, msg: 'shown' })]);
  });

  it('keeps time, level and msg its own: caller fields with those names are renamed', () => {
    const { logger, lines } = memoryLogger();
    logger.info('the message', { time: 'yesterday', level: 'fatal', msg: 'forged', other: 1 });
    const [line] = lines();
    expect(line).toMatchObject({ level: 'info', msg: 'the message', field_time: 'yesterday', field_level: 'fatal', field_msg: 'forged', other: 1 });
    expect(line!.time).not.toBe('yesterday');
  });

  it('writes no duplicate keys when a caller field shadows a reserved one', () => {
    const { logger, err } = memoryLogger();
    logger.warn('m', { level: 'x', time: 'y', msg: 'z' });
    expect(err).toHaveLength(1);
    for (const key of ['level', 'time', 'msg']) expect(err[0]!.split(`"${key}":`)).toHaveLength(2);
  });
});

describe('redaction', () => {
  const apiKey = 'bp_test_' + 'a1B2c3D4e5'.repeat(4);
  const liveKey = 'bp_live_' + 'Z9y8X7w6V5'.repeat(4);

  it('withholds API key text wherever it appears, keeping the prefix and the masked form', () => {
    const { logger, raw, lines } = memoryLogger();
    logger.info(`key ${liveKey} refused`, { key: apiKey, note: `tried ${apiKey} twice`, masked: 'bp_test_…a1b2', restricted: 'bp_rk_test_' + 'q'.repeat(40) });
    const text = raw();
    expect(text).not.toContain('a1B2c3D4e5');
    expect(text).not.toContain('Z9y8X7w6V5');
    expect(text).not.toContain('q'.repeat(40));
    expect(lines()[0]).toMatchObject({
      msg: `key bp_live_${REDACTED} refused`, key: `bp_test_${REDACTED}`, note: `tried bp_test_${REDACTED} twice`, masked: 'bp_test_…a1b2',
    });
  });

  it('withholds authorization headers, secrets, passwords and tokens by field name, at any depth', () => {
    const { logger, raw, lines } = memoryLogger();
    logger.warn('incoming', {
      authorization: 'Basic dXNlcjpwYXNz',
      headers: { authorization: 'Bearer admin-token-value', cookie: 'sid=cookie-value', accept: 'application/json' },
      endpoint: { url: 'https://example.com/hook', secret: 'whsec_c2VjcmV0LXZhbHVl' },
      deep: { a: { b: { password: 'hunter2-password', token: 12345678 } } },
      secret: { nested: 'object-secret-value' },
    });
    const text = raw();
    for (const s of ['dXNlcjpwYXNz', 'admin-token-value', 'cookie-value', 'c2VjcmV0LXZhbHVl', 'hunter2-password', '12345678', 'object-secret-value']) {
      expect(text).not.toContain(s);
    }
    expect(lines()[0]).toMatchObject({
      authorization: REDACTED,
      headers: { authorization: REDACTED, cookie: REDACTED, accept: 'application/json' },
      endpoint: { url: 'https://example.com/hook', secret: REDACTED },
      deep: { a: { b: { password: REDACTED, token: REDACTED } } },
      secret: REDACTED,
    });
  });

  it('never writes a card number or a CVC, in fields, nested bodies, messages or errors', () => {
    const { logger, raw, lines } = memoryLogger();
    logger.info('charge', { card: { number: '4242424242424242', cvc: '123', last4: '4242' } });
    logger.info('split', { body: { payment_method: { card: { number: '4000000000009995', cvc: '987', exp_month: 12 } } } });
    logger.error('gateway said no', { error: new Error('card 4000 0566 5566 5556 declined'), pan: 4111111111111111 });
    logger.info('a card in text followed by more digits: 4242-4242-4242-4242 123');
    const text = raw();
    for (const s of ['4242424242424242', '4000000000009995', '4000 0566 5566 5556', '4111111111111111', '4242-4242-4242-4242', '"123"', '"987"']) {
      expect(text).not.toContain(s);
    }
    const [charge, split, text4, failed] = lines();
    expect(charge!.card).toEqual({ number: REDACTED, cvc: REDACTED, last4: '4242' });
    expect(failed).toMatchObject({ pan: REDACTED, error: { message: `card ${REDACTED} declined` } });
    expect(text4!.msg).toBe(`a card in text followed by more digits: ${REDACTED}`);
    expect(split!.body.payment_method.card).toEqual({ number: REDACTED, cvc: REDACTED, exp_month: 12 });
  });

  it('leaves hex ids whole: a Luhn-valid digit run inside a trace id is no card number', () => {
    const { logger, lines } = memoryLogger();
    const traceId = '6b93a00ae3fbd85403971317973f02ee'; // 85403971317973 passes the Luhn check
    logger.info('request', { trace_id: traceId, note: `id ${traceId}x` });
    expect(lines()[0]).toMatchObject({ trace_id: traceId, note: `id ${traceId}x` });
  });

  it('keeps the line JSON when the card number is a bare number: negative, with a fraction or an exponent', () => {
    const { logger, out } = memoryLogger();
    logger.info('odd', { a: -4242424242424242, b: 4242424242424242.5, c: 4.242424242424242e21 });
    expect(out[0]).not.toContain('424242424242');
    expect(JSON.parse(out[0]!)).toMatchObject({ a: REDACTED, b: REDACTED, c: REDACTED });
  });

  it('leaves ordinary numbers and ids alone', () => {
    const { logger, lines } = memoryLogger();
    logger.info('numbers', { amount: 1234567890123, order_id: 'ord_01jz8x9k2m3n4p5q6r7s8t9v0w', duration_ms: 12.5, key_id: 'key_123' });
    // 1234567890123 fails the Luhn check, so it is not a card number.
    expect(lines()[0]).toMatchObject({ amount: 1234567890123, order_id: 'ord_01jz8x9k2m3n4p5q6r7s8t9v0w', duration_ms: 12.5, key_id: 'key_123' });
  });
});

describe('errors', () => {
  it('keeps name, message, stack, the cause chain and PostgreSQL fields', () => {
    const { logger, lines } = memoryLogger();
    const pgError = Object.assign(new Error('duplicate key value violates unique constraint "customers_email_key"'), {
      code: '23505', detail: 'Key (email)=(a@b.c) already exists.', constraint: 'customers_email_key',
      table: 'customers', column: undefined, schema: 'public', severity: 'ERROR',
    });
    const wrapped = new Error('could not save the customer', { cause: pgError });
    class OutboxError extends Error {
      override name = 'OutboxError';
    }
    logger.error('order failed', { error: new OutboxError('order workflow not started', { cause: wrapped }) });
    const { error } = lines()[0]!;
    expect(error).toMatchObject({ name: 'OutboxError', message: 'order workflow not started', stack: expect.stringContaining('OutboxError: order workflow not started') });
    expect(error.cause).toMatchObject({ name: 'Error', message: 'could not save the customer', stack: expect.any(String) });
    expect(error.cause.cause).toEqual({
      name: 'Error', message: pgError.message, code: '23505', detail: 'Key (email)=(a@b.c) already exists.',
      constraint: 'customers_email_key', table: 'customers', schema: 'public', stack: expect.any(String),
    });
  });

  it('serializes an Error under err (or any other name) the same way, and a non-Error cause as it is', () => {
    const { logger, lines } = memoryLogger();
    logger.warn('w', { err: new TypeError('bad', { cause: { reason: 'timeout', ms: 5 } }), other: new RangeError('r') });
    expect(lines()[0]).toMatchObject({
      err: { name: 'TypeError', message: 'bad', cause: { reason: 'timeout', ms: 5 } },
      other: { name: 'RangeError', message: 'r' },
    });
  });

  it('stops a cause chain after MAX_CAUSE_DEPTH levels (a cycle too)', () => {
    const { logger, lines } = memoryLogger();
    const a = new Error('a');
    const b = new Error('b', { cause: a });
    (a as { cause?: unknown }).cause = b;
    logger.error('cycle', { error: a });
    let node = lines()[0]!.error;
    let depth = 0;
    while (typeof node.cause === 'object') {
      node = node.cause;
      depth++;
    }
    expect(depth).toBe(MAX_CAUSE_DEPTH);
    expect(node.cause).toBe('[cause chain truncated]');
  });

  it('leaves a plain string error field as it is', () => {
    const { logger, lines } = memoryLogger();
    logger.warn('w', { error: 'connection reset' });
    expect(lines()[0]!.error).toBe('connection reset');
  });
});

describe('log context', () => {
  it('adds the context of the request or activity to every line logged inside it, and only there', async () => {
    const { logger, out, err } = memoryLogger('debug', { service: 'api' });
    logger.info('before');
    await withLogContext({ request_id: 'req_1' }, async () => {
      logger.info('admitted?');
      await Promise.resolve();
      addLogContext({ account_id: 'acct_1', mode: 'test' });
      await new Promise<void>((resolve) => setImmediate(() => {
        logger.warn('later, in a callback');
        resolve();
      }));
      await withLogContext({ workflow_id: 'wf_1', activity_type: 'charge' }, async () => logger.debug('nested'));
      logger.info('own field wins', { request_id: 'req_explicit' });
    });
    logger.info('after');
    const fields = (lines: string[]) => lines.map((l) => {
      const { time: _time, level: _level, ...rest } = JSON.parse(l);
      return rest;
    });
    expect(fields(out)).toEqual([
      { service: 'api', msg: 'before' },
      { service: 'api', request_id: 'req_1', msg: 'admitted?' },
      { service: 'api', request_id: 'req_1', account_id: 'acct_1', mode: 'test', workflow_id: 'wf_1', activity_type: 'charge', msg: 'nested' },
      { service: 'api', request_id: 'req_explicit', account_id: 'acct_1', mode: 'test', msg: 'own field wins' },
      { service: 'api', msg: 'after' },
    ]);
    expect(fields(err)).toEqual([{ service: 'api', request_id: 'req_1', account_id: 'acct_1', mode: 'test', msg: 'later, in a callback' }]);
  });

  it('does not leak one request\'s context into another running at the same time', async () => {
    const { logger, lines } = memoryLogger();
    let releaseA!: () => void;
    const aWaits = new Promise<void>((r) => (releaseA = r));
    const a = withLogContext({ request_id: 'req_a' }, async () => {
      addLogContext({ account_id: 'acct_a' });
      await aWaits;
      logger.info('a');
    });
    const b = withLogContext({ request_id: 'req_b' }, async () => {
      logger.info('b');
      releaseA();
    });
    await Promise.all([a, b]);
    expect(lines().map((l) => [l.msg, l.request_id, l.account_id])).toEqual([['b', 'req_b', undefined], ['a', 'req_a', 'acct_a']]);
  });

  it('addLogContext outside any context does nothing', () => {
    const { logger, lines } = memoryLogger();
    addLogContext({ account_id: 'acct_x' });
    logger.info('m');
    expect(lines()[0]).not.toHaveProperty('account_id');
  });
});
