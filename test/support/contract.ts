import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import { RouteTable, type Method } from '../../api/http/route-table.ts';

/**
 * Checks responses against the OpenAPI document the server publishes: the operation is found by
 * path template and method, the status must be one it documents, and a JSON or problem+json body
 * must match the schema documented for that status and media type. Paths match templates as the
 * server's own route table matches them (any case, a trailing slash, HEAD as GET, a static segment
 * before a parameter). Requests to paths or methods the document does not list (the admin tRPC
 * API, unknown routes), XML bodies, HEAD bodies and responses documented without a body schema
 * are not checked.
 */

interface Operation {
  responses?: Record<string, { content?: Record<string, { schema?: unknown }> }>;
}
interface Document {
  paths: Record<string, Record<string, Operation>>;
}

export class ContractViolation extends Error {
  override name = 'ContractViolation';
}

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATE_TIME = /^(\d{4}-\d{2}-\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

function validDate(value: string): boolean {
  const m = DATE.exec(value);
  if (!m) return false;
  const d = new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])));
  return d.getUTCFullYear() === Number(m[1]) && d.getUTCMonth() === Number(m[2]) - 1 && d.getUTCDate() === Number(m[3]);
}

/** The formats the document uses; an unknown one fails compilation (strict formats). */
function newAjv(): Ajv2020 {
  const ajv = new Ajv2020({ strict: false, strictTypes: false, allErrors: true, validateFormats: true });
  ajv.addFormat('date', validDate);
  ajv.addFormat('date-time', (v: string) => {
    const m = DATE_TIME.exec(v);
    return !!m && validDate(m[1]!) && Number(m[2]) < 24 && Number(m[3]) < 60 && Number(m[4]) < 61 && !Number.isNaN(Date.parse(v));
  });
  ajv.addFormat('email', /^[^\s@]+@[^\s@]+\.[^\s@]+$/);
  ajv.addFormat('uri', (v: string) => URL.canParse(v) && /^[a-z][a-z0-9+.-]*:/i.test(v));
  return ajv;
}

const pointer = (parts: string[]) =>
  '#' + parts.map((p) => '/' + encodeURIComponent(p.replace(/~/g, '~0').replace(/\//g, '~1'))).join('');

export class ResponseContract {
  private readonly ajv = newAjv();
  private readonly table: RouteTable<{ method: Method; path: string }>;
  private readonly validators = new Map<string, ValidateFunction>();
  private readonly doc: Document;

  constructor(doc: Document) {
    this.doc = doc;
    this.ajv.addSchema(doc as object, 'openapi');
    this.table = new RouteTable(Object.entries(doc.paths).flatMap(([path, ops]) => Object.keys(ops).map((method) => ({ method: method as Method, path }))));
  }

  /** The documented template `method path` is served by, if any. */
  templateFor(method: string, path: string): string | undefined {
    try {
      return this.table.match(method.toUpperCase(), path)?.route.path;
    } catch {
      return undefined; // not a path the server routes (e.g. malformed percent-encoding)
    }
  }

  /** Throws a ContractViolation when the response disagrees with the document. */
  check(method: string, url: string, status: number, contentType: string | null, text: string): void {
    const template = this.templateFor(method, url.split(/[?#]/)[0]!);
    const verb = method.toUpperCase() === 'HEAD' ? 'get' : method.toLowerCase();
    const op = template ? this.doc.paths[template]?.[verb] : undefined;
    if (!template || !op) return;
    const where = `${method.toUpperCase()} ${url} (${template}) answered ${status}`;
    const type = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
    if (type.includes('xml')) return;
    const response = op.responses?.[String(status)];
    if (!response) {
      throw new ContractViolation(`${where}, a status the OpenAPI document does not list for it (documented: ${Object.keys(op.responses ?? {}).join(', ')}).\nBody: ${text.slice(0, 500)}`);
    }
    if (!response.content || method.toUpperCase() === 'HEAD') return;
    const media = response.content[type];
    if (!media) {
      throw new ContractViolation(`${where} with Content-Type ${contentType ?? '(none)'}, not one the document lists for it (${Object.keys(response.content).join(', ')}).\nBody: ${text.slice(0, 500)}`);
    }
    if (media.schema === undefined) return;
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      throw new ContractViolation(`${where} with a body that is not JSON: ${text.slice(0, 200)}`);
    }
    const ref = pointer(['paths', template, verb, 'responses', String(status), 'content', type, 'schema']);
    let validate = this.validators.get(ref);
    if (!validate) {
      validate = this.ajv.compile({ $ref: `openapi${ref}` });
      this.validators.set(ref, validate);
    }
    if (!validate(body)) {
      throw new ContractViolation(`${where}: the body does not match the OpenAPI document (${type}):\n${describe(validate.errors ?? [])}\nBody: ${text.slice(0, 2000)}`);
    }
  }
}

function describe(errors: ErrorObject[]): string {
  return errors
    .slice(0, 20)
    .map((e) => `  ${e.instancePath || '(root)'} ${e.message ?? ''} ${JSON.stringify(e.params)} [schema ${decodeURIComponent(e.schemaPath)}]`)
    .join('\n');
}

const contracts = new Map<string, Promise<ResponseContract>>();
/**
 * Contracts by document text: the test files of a process share it (each file's server publishes the
 * same document), and with it the validators already compiled — compiling them again for every file
 * cost more than the checks.
 */
const byDocument = new Map<string, ResponseContract>();

/** The contract of the server at `baseUrl`, its document fetched once. */
export function contractFor(baseUrl: string): Promise<ResponseContract> {
  let contract = contracts.get(baseUrl);
  if (!contract) {
    contract = (async () => {
      const res = await fetch(`${baseUrl}/v3/openapi.json`);
      if (res.status !== 200) throw new Error(`GET ${baseUrl}/v3/openapi.json answered ${res.status}; cannot check responses against it`);
      const text = await res.text();
      let known = byDocument.get(text);
      if (!known) {
        known = new ResponseContract(JSON.parse(text) as Document);
        byDocument.set(text, known);
      }
      return known;
    })();
    contracts.set(baseUrl, contract);
    // A failed fetch is not cached: the next response tries again.
    contract.catch(() => contracts.delete(baseUrl));
  }
  return contract;
}
