import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * Local HTTP doubles of Adyen Checkout v72 and PayPal (OAuth, Vault v3, Orders v2, Payments v2),
 * answering in the shapes the providers document, with test scenarios chosen like the providers'
 * own test cards and amounts:
 *
 * | card / amount | Adyen | PayPal |
 * |---|---|---|
 * | 4111111111111111, 5555555555554444 | Authorised | order COMPLETED, capture COMPLETED (fee 3.49% + 0.49) |
 * | 4000000000000002 | Refused ("Refused", code 2) | capture DECLINED, processor response 0500 |
 * | 4000000000009995 | Refused ("Not enough balance", code 12) | 422 UNPROCESSABLE_ENTITY, issue INSTRUMENT_DECLINED |
 * | 4212345678910006 | ChallengeShopper (3-D Secure 2 action) | order PAYER_ACTION_REQUIRED (payer-action link) |
 * | amount 42900 (429.00) | 429 Too many requests | 429 RATE_LIMIT_REACHED |
 * | amount 50300 (503.00) | 500 internal error | 500 INTERNAL_SERVER_ERROR |
 *
 * Both replay the first answer for a repeated idempotency key (Adyen `Idempotency-Key`, PayPal
 * `PayPal-Request-Id`), and record every request so a test can check what left the platform
 * (e.g. that no card number is sent with a charge).
 */

export interface DoubleRequest {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: any;
}

export interface Double {
  url: string;
  requests: DoubleRequest[];
  /** While down, every request is answered 503 (the provider is unreachable for the platform). */
  setDown(down: boolean): void;
  close(): Promise<void>;
}

async function readJson(req: IncomingMessage): Promise<{ raw: string; body: any }> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const raw = Buffer.concat(chunks).toString('utf8');
  if (!raw) return { raw, body: null };
  try {
    return { raw, body: JSON.parse(raw) };
  } catch {
    return { raw, body: Object.fromEntries(new URLSearchParams(raw)) };
  }
}

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'Content-Type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

async function start(handler: (req: DoubleRequest, res: ServerResponse) => void): Promise<Double> {
  const requests: DoubleRequest[] = [];
  let down = false;
  const server = createServer(async (req, res) => {
    const { body } = await readJson(req);
    const entry = { method: req.method ?? 'GET', path: req.url ?? '/', headers: req.headers, body };
    requests.push(entry);
    if (down) return send(res, 503, { status: 503, name: 'SERVICE_UNAVAILABLE', message: 'Service Unavailable', errorType: 'internal' });
    try {
      handler(entry, res);
    } catch (err) {
      send(res, 500, { message: String(err) });
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, requests, setDown: (d) => (down = d), close: () => new Promise((resolve) => server.close(() => resolve())) };
}

const psp = () => randomBytes(8).toString('hex').toUpperCase().slice(0, 16);

/** Adyen Checkout v72: /payments (tokenize with storePaymentMethod, charge a stored method) and /payments/{psp}/refunds. */
export function startAdyenDouble(opts: { apiKey: string; merchantAccount: string }): Promise<Double> {
  const stored = new Map<string, { number: string; shopperReference: string }>();
  const charges = new Map<string, { value: number; currency: string }>();
  const replies = new Map<string, { status: number; body: unknown }>();
  return start((req, res) => {
    if (req.headers['x-api-key'] !== opts.apiKey) {
      return send(res, 401, { status: 401, errorCode: '000', message: 'HTTP Status Response - Unauthorized', errorType: 'security' });
    }
    const key = req.headers['idempotency-key'];
    if (typeof key === 'string' && replies.has(key)) {
      const r = replies.get(key)!;
      return send(res, r.status, r.body, { 'Idempotency-Key': key });
    }
    const reply = (status: number, body: unknown) => {
      if (typeof key === 'string') replies.set(key, { status, body });
      send(res, status, body);
    };
    if (req.body?.merchantAccount !== opts.merchantAccount) {
      return reply(403, { status: 403, errorCode: '901', message: 'Invalid Merchant Account', errorType: 'security' });
    }
    const refund = /^\/v\d+\/payments\/([A-Z0-9]+)\/refunds$/.exec(req.path);
    if (req.method === 'POST' && refund) {
      if (!charges.has(refund[1]!)) return reply(422, { status: 422, errorCode: '167', message: 'Original pspReference required for this operation', errorType: 'validation' });
      return reply(201, {
        merchantAccount: opts.merchantAccount, paymentPspReference: refund[1], pspReference: psp(), reference: req.body.reference, status: 'received', amount: req.body.amount,
      });
    }
    if (req.method !== 'POST' || !/^\/v\d+\/payments$/.test(req.path)) return reply(404, { status: 404, errorCode: '000', message: 'Not found', errorType: 'validation' });
    const pm = req.body.paymentMethod ?? {};
    const value: number = req.body.amount?.value;
    if (value === 42900) return send(res, 429, { status: 429, errorCode: '000', message: 'Too many requests', errorType: 'validation' });
    if (value === 50300) return send(res, 500, { status: 500, errorCode: '905', message: 'Internal error', errorType: 'internal' });
    if (pm.number) {
      // Tokenization: a zero-value authorisation that stores the card.
      if (!req.body.storePaymentMethod) return reply(422, { status: 422, errorCode: '000', message: 'Raw card data is accepted only to store it', errorType: 'validation' });
      const id = `${psp()}${psp()}`.slice(0, 16);
      stored.set(id, { number: pm.number, shopperReference: req.body.shopperReference });
      const brand = pm.number.startsWith('5') ? 'mc' : 'visa';
      return reply(200, {
        additionalData: { 'tokenization.storedPaymentMethodId': id, 'tokenization.shopperReference': req.body.shopperReference, cardSummary: pm.number.slice(-4), paymentMethod: brand },
        pspReference: psp(), resultCode: 'Authorised', merchantReference: req.body.reference, paymentMethod: { brand, type: 'scheme' },
      });
    }
    const card = stored.get(pm.storedPaymentMethodId);
    if (!card || card.shopperReference !== req.body.shopperReference) {
      return reply(422, { status: 422, errorCode: '800', message: 'Contract not found', errorType: 'validation' });
    }
    const reference = psp();
    const base = { pspReference: reference, merchantReference: req.body.reference, amount: req.body.amount };
    switch (card.number) {
      case '4000000000000002': return reply(200, { ...base, resultCode: 'Refused', refusalReason: 'Refused', refusalReasonCode: '2' });
      case '4000000000009995': return reply(200, { ...base, resultCode: 'Refused', refusalReason: 'Not enough balance', refusalReasonCode: '12' });
      case '4212345678910006': return reply(200, {
        ...base, resultCode: 'ChallengeShopper',
        action: { paymentData: 'Ab02b4c0!BQABAgA…', paymentMethodType: 'scheme', authorisationToken: 'Ab02b4c0!…', subtype: 'challenge', token: 'eyJ…', type: 'threeDS2' },
      });
      default:
        charges.set(reference, { value, currency: req.body.amount.currency });
        return reply(200, { ...base, resultCode: 'Authorised', additionalData: { authCode: '065696' }, fraudResult: { accountScore: 12, results: [] } });
    }
  });
}

/** PayPal: OAuth client credentials, Vault v3 setup and payment tokens, Orders v2 with a vaulted card, capture refunds. */
export function startPayPalDouble(opts: { clientId: string; clientSecret: string }): Promise<Double> {
  const tokens = new Set<string>();
  const setups = new Map<string, string>();
  const vaulted = new Map<string, { number: string; expiry: string }>();
  const captures = new Set<string>();
  const replies = new Map<string, { status: number; body: unknown }>();
  const debug = () => randomBytes(6).toString('hex');
  return start((req, res) => {
    if (req.path === '/v1/oauth2/token') {
      const expected = `Basic ${Buffer.from(`${opts.clientId}:${opts.clientSecret}`).toString('base64')}`;
      if (req.headers.authorization !== expected) return send(res, 401, { error: 'invalid_client', error_description: 'Client Authentication failed' });
      const token = `A21AA${randomBytes(16).toString('hex')}`;
      tokens.add(token);
      return send(res, 200, { scope: 'https://uri.paypal.com/services/payments/payment', access_token: token, token_type: 'Bearer', app_id: 'APP-80W284485P519543T', expires_in: 32400, nonce: debug() });
    }
    const bearer = (req.headers.authorization ?? '').replace(/^Bearer /, '');
    if (!tokens.has(bearer)) return send(res, 401, { name: 'AUTHENTICATION_FAILURE', message: 'Authentication failed due to invalid authentication credentials or a missing Authorization header.', debug_id: debug() });
    const key = req.headers['paypal-request-id'];
    if (typeof key === 'string' && replies.has(key)) {
      const r = replies.get(key)!;
      return send(res, r.status, r.body);
    }
    const reply = (status: number, body: unknown) => {
      if (typeof key === 'string' && status < 500 && status !== 429) replies.set(key, { status, body });
      send(res, status, body);
    };
    const brandOf = (n: string) => (n.startsWith('5') ? 'MASTERCARD' : n.startsWith('3') ? 'AMEX' : 'VISA');
    if (req.method === 'POST' && req.path === '/v3/vault/setup-tokens') {
      const card = req.body?.payment_source?.card;
      if (!card?.number) return reply(400, { name: 'INVALID_REQUEST', message: 'Request is not well-formed', details: [{ issue: 'MISSING_REQUIRED_PARAMETER', field: '/payment_source/card/number' }], debug_id: debug() });
      const id = `5C${randomBytes(7).toString('hex').toUpperCase()}`;
      setups.set(id, JSON.stringify(card));
      return reply(201, {
        id, customer: { id: `cust_${debug()}` }, status: 'APPROVED',
        payment_source: { card: { last_digits: card.number.slice(-4), brand: brandOf(card.number), expiry: card.expiry } },
        links: [{ href: `${req.path}/${id}`, rel: 'self', method: 'GET' }],
      });
    }
    if (req.method === 'POST' && req.path === '/v3/vault/payment-tokens') {
      const setup = setups.get(req.body?.payment_source?.token?.id);
      if (!setup) return reply(404, { name: 'RESOURCE_NOT_FOUND', message: 'The specified resource does not exist.', details: [{ issue: 'INVALID_RESOURCE_ID' }], debug_id: debug() });
      const card = JSON.parse(setup) as { number: string; expiry: string };
      const id = randomBytes(4).toString('hex');
      vaulted.set(id, { number: card.number, expiry: card.expiry });
      return reply(201, {
        id, customer: { id: `cust_${debug()}` },
        payment_source: { card: { last_digits: card.number.slice(-4), brand: brandOf(card.number), expiry: card.expiry } },
        links: [{ href: `/v3/vault/payment-tokens/${id}`, rel: 'self', method: 'GET' }],
      });
    }
    if (req.method === 'POST' && req.path === '/v2/checkout/orders') {
      const unit = req.body?.purchase_units?.[0];
      const amount = unit?.amount as { currency_code: string; value: string };
      if (amount?.value === '429.00') return send(res, 429, { name: 'RATE_LIMIT_REACHED', message: 'Too many requests. Blocked due to rate limiting.', debug_id: debug() });
      if (amount?.value === '503.00') return send(res, 500, { name: 'INTERNAL_SERVER_ERROR', message: 'An internal server error has occurred.', debug_id: debug() });
      const card = vaulted.get(req.body?.payment_source?.card?.vault_id);
      if (!card) return reply(422, { name: 'UNPROCESSABLE_ENTITY', message: 'The requested action could not be performed.', details: [{ issue: 'INVALID_PAYMENT_TOKEN', description: 'The vault id is unknown.' }], debug_id: debug() });
      const orderId = randomBytes(8).toString('hex').toUpperCase();
      if (card.number === '4000000000009995') {
        return reply(422, { name: 'UNPROCESSABLE_ENTITY', message: 'The requested action could not be performed, semantically incorrect, or failed business validation.', details: [{ issue: 'INSTRUMENT_DECLINED', description: 'The instrument presented was either declined by the processor or bank, or it can\'t be used for this payment.' }], debug_id: debug() });
      }
      if (card.number === '4212345678910006') {
        return reply(201, { id: orderId, status: 'PAYER_ACTION_REQUIRED', links: [{ href: `https://www.sandbox.paypal.com/webapps/helios?action=verify&flow=3ds&cart_id=${orderId}`, rel: 'payer-action', method: 'GET' }] });
      }
      const captureId = randomBytes(8).toString('hex').toUpperCase();
      const declined = card.number === '4000000000000002';
      if (!declined) captures.add(captureId);
      const gross = Number(amount.value);
      const fee = (Math.round((gross * 0.0349 + 0.49) * 100) / 100).toFixed(2);
      return reply(201, {
        id: orderId, intent: 'CAPTURE', status: 'COMPLETED',
        payment_source: { card: { last_digits: card.number.slice(-4), brand: brandOf(card.number), type: 'CREDIT' } },
        purchase_units: [{
          reference_id: unit.reference_id, custom_id: unit.custom_id, amount,
          payments: { captures: [{
            id: captureId, status: declined ? 'DECLINED' : 'COMPLETED', amount, final_capture: true,
            ...(declined
              ? { processor_response: { avs_code: 'Y', cvv_code: 'M', response_code: '0500' } }
              : {
                processor_response: { avs_code: 'Y', cvv_code: 'M', response_code: '0000' },
                seller_receivable_breakdown: { gross_amount: amount, paypal_fee: { currency_code: amount.currency_code, value: fee }, net_amount: { currency_code: amount.currency_code, value: (gross - Number(fee)).toFixed(2) } },
              }),
            create_time: new Date().toISOString(), update_time: new Date().toISOString(),
          }] },
        }],
        links: [{ href: `/v2/checkout/orders/${orderId}`, rel: 'self', method: 'GET' }],
      });
    }
    const refund = /^\/v2\/payments\/captures\/([A-Z0-9]+)\/refund$/.exec(req.path);
    if (req.method === 'POST' && refund) {
      if (!captures.has(refund[1]!)) return reply(404, { name: 'RESOURCE_NOT_FOUND', message: 'The specified resource does not exist.', details: [{ issue: 'INVALID_RESOURCE_ID', description: 'Specified resource ID does not exist.' }], debug_id: debug() });
      return reply(201, { id: randomBytes(8).toString('hex').toUpperCase(), status: 'COMPLETED', links: [] });
    }
    return send(res, 404, { name: 'RESOURCE_NOT_FOUND', message: 'The specified resource does not exist.', debug_id: debug() });
  });
}
