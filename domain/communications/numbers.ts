import { randomBytes } from 'node:crypto';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { ApiError, conflict, notFound, validationFailed } from '../../platform/errors.ts';
import { newId } from '../../platform/ids.ts';
import { readScopedOr404, scopeColumns, type Scope } from '../scope.ts';
import { CommsAddress, PhoneNumber, type NumberFeature, type NumberType } from './entities.ts';
import { countryOf } from './phone.ts';
import type { Telephony } from './telephony/index.ts';
import type { TelephonyAdapter } from './telephony/types.ts';
import type { PhoneNumberView } from './schemas.ts';
import { isUniqueViolation } from '../../db/errors.ts';

/** Monthly rent in USD minor units, by number type. */
export const MONTHLY_COST: Record<NumberType, number> = { local: 115, toll_free: 215, international: 400 };

export function numberView(n: PhoneNumber, showSecret = false): PhoneNumberView {
  return {
    id: n.id, object: 'phone_number', livemode: n.livemode, number: n.number, number_type: n.numberType, country: n.country,
    area_code: n.areaCode ?? null, features: n.features, monthly_cost: n.monthlyCost, currency: n.currency, status: n.status,
    inbound_secret: showSecret ? n.inboundSecret : null, metadata: n.metadata, created_at: n.createdAt.toISOString(),
    released_at: n.releasedAt ? n.releasedAt.toISOString() : null,
  };
}

/** The carrier of the scope's mode; live mode without a carrier is refused (nothing is bought or dialed). */
export function carrierFor(telephony: Telephony, scope: Scope): TelephonyAdapter {
  const carrier = telephony.carrier(scope.livemode);
  if (!carrier) {
    throw new ApiError({
      status: 503, code: 'telephony_not_configured', title: 'Service Unavailable',
      detail: 'No live telephony carrier is configured on this server; nothing was bought, dialed or sent.',
      suggestion: 'Use a test key (the sandbox carrier), or configure a live carrier on the server.',
      headers: { 'Retry-After': '3600' },
    });
  }
  return carrier;
}

export interface ProvisionInput {
  numberType: NumberType;
  areaCode: string | null;
  country: string | null;
  features: NumberFeature[];
  metadata: Record<string, string>;
  requestIdempotencyKey: string | null;
}

async function takenNumbers(em: EntityManager, livemode: boolean, candidates: string[]): Promise<Set<string>> {
  if (candidates.length === 0) return new Set();
  // Numbers rented by any account of this mode are not available (the unique index enforces it too).
  const rows = await em.getConnection().execute<{ number: string }[]>(
    `select number from comm_phone_numbers where status = 'active' and livemode = ? and number in (?)`,
    [livemode, candidates],
  );
  return new Set(rows.map((r) => r.number));
}

/** Numbers the carrier offers that nobody rents. */
export async function availableNumbers(
  em: EntityManager, carrier: TelephonyAdapter, livemode: boolean,
  search: { numberType: NumberType; areaCode: string | null; country: string | null; limit: number },
): Promise<string[]> {
  const candidates = await carrier.searchNumbers({ ...search, limit: search.limit });
  const taken = await takenNumbers(em, livemode, candidates);
  return candidates.filter((n) => !taken.has(n)).slice(0, search.limit);
}

function checkProvisionInput(input: ProvisionInput): void {
  const errors = [];
  if (input.numberType === 'local' && !input.areaCode) errors.push({ path: 'area_code', message: 'local numbers need an area_code (three digits, e.g. 415)' });
  if (input.numberType !== 'local' && input.areaCode) errors.push({ path: 'area_code', message: 'area_code applies to local numbers only; remove it' });
  if (input.numberType === 'international' && !input.country) errors.push({ path: 'country', message: 'international numbers need a country (ISO 3166 alpha-2, e.g. GB)' });
  if (input.numberType !== 'international' && input.country && input.country !== 'US') {
    errors.push({ path: 'country', message: 'local and toll_free numbers are US numbers; use number_type international for other countries' });
  }
  if (errors.length) throw validationFailed(errors);
}

export async function findNumberByRequestKey(em: EntityManager, key: string): Promise<PhoneNumberView | null> {
  const n = await em.findOne(PhoneNumber, { requestIdempotencyKey: key });
  return n ? numberView(n, true) : null;
}

/**
 * Rents a number: the first available one for the type (and area code or country), bought from
 * the carrier and recorded. International numbers need the account's regulatory address on file.
 * No number left → 409 `no_numbers_available` with nearby area codes. Idempotent by request key.
 */
export async function provisionNumber(em: EntityManager, carrier: TelephonyAdapter, scope: Scope, input: ProvisionInput): Promise<PhoneNumberView> {
  checkProvisionInput(input);
  if (input.requestIdempotencyKey) {
    const existing = await findNumberByRequestKey(em, input.requestIdempotencyKey);
    if (existing) return existing;
  }
  if (input.numberType === 'international' && !(await em.findOne(CommsAddress, { accountId: scope.accountId }))) {
    throw new ApiError({
      status: 422, code: 'regulatory_address_required', title: 'Regulatory Address Required',
      detail: `Numbers in ${input.country} need the account's address on file (a regulatory requirement).`,
      suggestion: 'Put the address with PUT /v3/communications/address, then provision again.',
      errors: [{ path: 'country', message: 'an address on file is required for international numbers' }],
    });
  }
  for (let attempt = 0; attempt < 5; attempt++) {
    const [number] = await availableNumbers(em, carrier, scope.livemode, { numberType: input.numberType, areaCode: input.areaCode, country: input.country, limit: 1 });
    if (!number) {
      const nearby = input.areaCode ? carrier.nearbyAreaCodes(input.areaCode) : [];
      throw conflict(
        'no_numbers_available',
        input.areaCode ? `No numbers are left in area code ${input.areaCode}.` : `No ${input.numberType} numbers are left${input.country ? ` in ${input.country}` : ''}.`,
        nearby.length ? `Try a nearby area code: ${nearby.join(', ')}.` : 'Try another country or number type, or search with GET /v3/communications/numbers/available.',
        { suggestions: nearby.map((areaCode) => ({ area_code: areaCode })) },
      );
    }
    const id = newId('phoneNumber');
    await carrier.buyNumber({ number, features: input.features, idempotencyKey: input.requestIdempotencyKey ?? id });
    const row = em.create(PhoneNumber, {
      id, ...scopeColumns(scope), number, numberType: input.numberType, country: countryOf(number), areaCode: input.numberType === 'local' ? input.areaCode : null,
      features: [...new Set(input.features)], monthlyCost: MONTHLY_COST[input.numberType], currency: 'USD', status: 'active',
      inboundSecret: `whsec_${randomBytes(24).toString('base64')}`, requestIdempotencyKey: input.requestIdempotencyKey,
      metadata: input.metadata, releasedAt: null,
    });
    try {
      await em.flush();
      return numberView(row, true);
    } catch (err) {
      em.clear();
      if (!isUniqueViolation(err)) throw err;
      if (input.requestIdempotencyKey) {
        const existing = await findNumberByRequestKey(em.fork(), input.requestIdempotencyKey);
        if (existing) return existing;
      }
      // Someone else rented that number a moment earlier: take the next one.
    }
  }
  throw conflict('no_numbers_available', 'Numbers in this range are being rented by others right now.', 'Retry in a moment.');
}

/** A number by id for GET /v3/communications/numbers/{id}: one prepared statement, no EntityManager (readScopedOr404). */
export async function readNumber(orm: MikroORM, scope: Scope, id: string): Promise<PhoneNumberView> {
  return numberView(await readScopedOr404(orm, scope, PhoneNumber, id, 'phone number'));
}

export async function getNumber(em: EntityManager, id: string): Promise<PhoneNumber> {
  const n = await em.findOne(PhoneNumber, { id });
  if (!n) throw notFound('phone number', id);
  return n;
}

/** Gives the number back to the carrier; it stays listed as `released`. Releasing twice is a 409. */
export async function releaseNumber(em: EntityManager, carrier: () => TelephonyAdapter, id: string): Promise<PhoneNumberView> {
  const n = await getNumber(em, id); // 404 first: another account's (or mode's) number is not ours to know about
  if (n.status === 'released') {
    throw conflict('invalid_state_transition', `Phone number ${id} was already released.`, 'Provision a new number if you need one.', { current_state: 'released' });
  }
  await carrier().releaseNumber(n.number);
  n.status = 'released';
  n.releasedAt = new Date();
  await em.flush();
  return numberView(n);
}

export async function listNumbers(
  em: EntityManager, filters: { status?: 'active' | 'released'; numberType?: NumberType },
  page: { where: Record<string, unknown>; direction: 'asc' | 'desc'; limit: number },
): Promise<PhoneNumberView[]> {
  const where: Record<string, unknown> = { ...page.where };
  if (filters.status) where.status = filters.status;
  if (filters.numberType) where.numberType = filters.numberType;
  const rows = await em.find(PhoneNumber, where, { orderBy: { id: page.direction }, limit: page.limit + 1 });
  return rows.map((n) => numberView(n));
}

export interface AddressInput {
  name: string;
  line1: string;
  city: string;
  postalCode: string;
  country: string;
}

export async function putAddress(em: EntityManager, scope: Scope, input: AddressInput) {
  const now = new Date();
  let row = await em.findOne(CommsAddress, { accountId: scope.accountId });
  if (row) Object.assign(row, { ...input, updatedAt: now });
  else row = em.create(CommsAddress, { ...scopeColumns(scope), ...input, createdAt: now, updatedAt: now });
  await em.flush();
  return {
    object: 'regulatory_address' as const, livemode: scope.livemode, name: row.name, line1: row.line1, city: row.city,
    postal_code: row.postalCode, country: row.country, updated_at: row.updatedAt.toISOString(),
  };
}
