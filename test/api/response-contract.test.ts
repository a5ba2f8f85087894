import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ContractViolation, ResponseContract } from '../support/contract.ts';
import { build, spec } from '../support/route-specs.ts';

describe('response contract check (test/support/contract.ts)', () => {
  const item = z.object({ id: z.string(), at: z.iso.datetime(), count: z.number().int() }).meta({ id: 'ContractItem' });
  const contract = new ResponseContract(build([
    spec({ operationId: 'get', path: '/v3/items/{id}', params: z.object({ id: z.string() }), response: item }),
    spec({ operationId: 'search', path: '/v3/items/search', response: z.object({ hits: z.number() }) }),
  ]));
  const json = 'application/json; charset=utf-8';
  const good = JSON.stringify({ id: 'i_1', at: '2025-03-14T09:30:00.000Z', count: 3 });
  const problem = (status: number) => JSON.stringify({
    type: 'http://localhost/docs/errors/not_found', title: 'Not Found', status, detail: 'd', code: 'not_found', request_id: 'req_1', suggestion: 's', extra: 1,
  });

  it('accepts a body that matches, and picks a literal segment over a parameter', () => {
    expect(() => contract.check('GET', '/v3/items/i_1?expand=x', 200, json, good)).not.toThrow();
    expect(contract.templateFor('GET', '/v3/items/search')).toBe('/v3/items/search');
    expect(contract.templateFor('GET', '/v3/Items/i_1/')).toBe('/v3/items/{id}');
    expect(() => contract.check('GET', '/v3/items/search', 200, json, JSON.stringify({ hits: 2 }))).not.toThrow();
  });

  it('fails a body that does not match, naming the path, status and every error', () => {
    const bad = JSON.stringify({ id: 7, at: '14/03/2025', count: 3, surprise: true });
    let error: unknown;
    try {
      contract.check('GET', '/v3/items/i_1', 200, json, bad);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ContractViolation);
    const message = (error as Error).message;
    expect(message).toContain('GET /v3/items/i_1 (/v3/items/{id}) answered 200');
    expect(message).toMatch(/\/id must be string/);
    expect(message).toMatch(/\/at must match format "date-time"|\/at must match pattern/);
    expect(message).toMatch(/must NOT have additional properties.*surprise/);
  });

  it('fails a status the operation does not document, and a media type it does not list', () => {
    expect(() => contract.check('GET', '/v3/items/i_1', 402, 'application/problem+json', problem(402))).toThrow(/402, a status the OpenAPI document does not list/);
    expect(() => contract.check('GET', '/v3/items/i_1', 404, json, problem(404))).toThrow(/Content-Type application\/json; charset=utf-8, not one the document lists/);
  });

  it('checks problem documents against the Problem schema', () => {
    expect(() => contract.check('GET', '/v3/items/i_1', 404, 'application/problem+json', problem(404))).not.toThrow();
    expect(() => contract.check('GET', '/v3/items/i_1', 404, 'application/problem+json', JSON.stringify({ title: 'Not Found' })))
      .toThrow(/must have required property 'request_id'/);
  });

  it('skips what the document does not describe: unknown paths and methods, XML bodies', () => {
    expect(() => contract.check('GET', '/v3/nowhere', 404, 'application/problem+json', '{}')).not.toThrow();
    expect(() => contract.check('DELETE', '/v3/items/i_1', 405, 'application/problem+json', '{}')).not.toThrow();
    expect(() => contract.check('GET', '/v3/items/i_1', 200, 'application/xml', '<item/>')).not.toThrow();
    expect(() => contract.check('GET', '/v3/items/%E0%A4%A', 400, 'application/problem+json', '{}')).not.toThrow();
    expect(() => contract.check('HEAD', '/v3/items/i_1', 200, json, '')).not.toThrow();
    expect(() => contract.check('HEAD', '/v3/items/i_1', 402, json, '')).toThrow(/402/);
  });
});
