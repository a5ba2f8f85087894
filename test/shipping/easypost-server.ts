import { createHmac, randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A local stand-in for the EasyPost API (https://docs.easypost.com), answering in its documented
 * shapes: Shipment (with rates), buy (selected_rate, tracking_code, postage_label, tracker), retrieve
 * by id or reference, refund, Pickup create/buy/cancel, and the error envelope `{ error: { code,
 * message, errors } }`. A test moves a tracker on with `track(...)` and signs webhooks with `sign`.
 */
export interface FakeEasyPost {
  url: string;
  apiKey: string;
  webhookSecret: string;
  shipments: Map<string, any>;
  requests: { method: string; path: string; body: any }[];
  track(trackingCode: string, details: { status: string; status_detail?: string; message: string; datetime: string }[], est?: string): void;
  sign(body: string): string;
  close(): Promise<void>;
}

const now = () => new Date().toISOString();

export async function startFakeEasyPost(): Promise<FakeEasyPost> {
  const apiKey = 'EZTK_test_0123456789abcdef';
  const webhookSecret = 'whsec_easypost_test_secret';
  const shipments = new Map<string, any>();
  const byReference = new Map<string, string>();
  const requests: FakeEasyPost['requests'] = [];
  const id = (prefix: string) => `${prefix}_${randomBytes(8).toString('hex')}`;

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const body = text ? JSON.parse(text) : {};
      const path = (req.url ?? '').split('?')[0]!;
      requests.push({ method: req.method ?? '', path, body });
      const send = (status: number, doc: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(doc));
      };
      const error = (status: number, code: string, message: string, errors: unknown[] = []) => send(status, { error: { code, message, errors } });
      const auth = req.headers.authorization ?? '';
      if (auth !== `Basic ${Buffer.from(`${apiKey}:`).toString('base64')}`) return error(401, 'APIKEY.INACTIVE', 'This api key is no longer active.');
      let m: RegExpExecArray | null;
      if (req.method === 'POST' && path === '/v2/shipments') {
        const p = body.shipment;
        if (p.to_address?.zip === '00000') {
          return error(422, 'ADDRESS.VERIFY.FAILURE', 'Unable to verify address.', [{ field: 'address', message: 'Address not found' }]);
        }
        const sid = id('shp');
        const rate = (service: string, amount: string, days: number) => ({
          id: id('rate'), object: 'Rate', mode: 'test', service, carrier: 'USPS', rate: amount, currency: 'USD', retail_rate: amount,
          delivery_days: days, delivery_date: null, delivery_date_guaranteed: false, shipment_id: sid, carrier_account_id: 'ca_test', created_at: now(), updated_at: now(),
        });
        const shipment = {
          id: sid, object: 'Shipment', mode: 'test', reference: p.reference ?? null, created_at: now(), updated_at: now(), status: 'unknown',
          to_address: { id: id('adr'), object: 'Address', ...p.to_address }, from_address: { id: id('adr'), object: 'Address', ...p.from_address },
          parcel: { id: id('prcl'), object: 'Parcel', ...p.parcel },
          rates: [rate('GroundAdvantage', '7.58', 5), rate('Priority', '9.45', 2), rate('Express', '31.25', 1)],
          selected_rate: null, postage_label: null, tracking_code: null, tracker: null, messages: [], fees: [],
        };
        shipments.set(sid, shipment);
        if (shipment.reference) byReference.set(shipment.reference, sid);
        return send(201, shipment);
      }
      if (req.method === 'GET' && (m = /^\/v2\/shipments\/([^/]+)$/.exec(path))) {
        const s = shipments.get(m[1]!) ?? shipments.get(byReference.get(m[1]!) ?? '');
        return s ? send(200, s) : error(404, 'NOT_FOUND', 'The requested resource could not be found.');
      }
      if (req.method === 'POST' && (m = /^\/v2\/shipments\/([^/]+)\/buy$/.exec(path))) {
        const s = shipments.get(m[1]!);
        if (!s) return error(404, 'NOT_FOUND', 'The requested resource could not be found.');
        if (s.selected_rate) return error(422, 'SHIPMENT.POSTAGE.EXISTS', 'Postage already exists for this shipment.');
        const rate = s.rates.find((r: any) => r.id === body.rate?.id);
        if (!rate) return error(422, 'SHIPMENT.RATE.INVALID', 'Rate not found.');
        const code = `9400${String(shipments.size).padStart(18, '0')}`;
        Object.assign(s, {
          selected_rate: rate, tracking_code: code, status: 'unknown',
          postage_label: { id: id('pl'), object: 'PostageLabel', label_url: `https://easypost-files.s3.amazonaws.com/files/postage_label/${code}.png`, label_file_type: 'image/png' },
          tracker: { id: id('trk'), object: 'Tracker', mode: 'test', tracking_code: code, status: 'pre_transit', est_delivery_date: null, carrier: 'USPS', tracking_details: [] },
        });
        return send(200, s);
      }
      if (req.method === 'POST' && (m = /^\/v2\/shipments\/([^/]+)\/refund$/.exec(path))) {
        const s = shipments.get(m[1]!);
        if (!s) return error(404, 'NOT_FOUND', 'The requested resource could not be found.');
        s.refund_status = 'submitted';
        return send(200, s);
      }
      if (req.method === 'POST' && path === '/v2/pickups') {
        return send(201, {
          id: id('pickup'), object: 'Pickup', mode: 'test', status: 'unknown', reference: body.pickup.reference, confirmation: null,
          min_datetime: body.pickup.min_datetime, max_datetime: body.pickup.max_datetime,
          pickup_rates: [{ id: id('rate'), object: 'PickupRate', service: 'NextDay', carrier: 'USPS', rate: '0.00', currency: 'USD' }],
        });
      }
      if (req.method === 'POST' && (m = /^\/v2\/pickups\/([^/]+)\/buy$/.exec(path))) {
        return send(200, { id: m[1], object: 'Pickup', status: 'scheduled', confirmation: 'WTC60012345', pickup_rates: [] });
      }
      if (req.method === 'POST' && (m = /^\/v2\/pickups\/([^/]+)\/cancel$/.exec(path))) {
        return send(200, { id: m[1], object: 'Pickup', status: 'canceled' });
      }
      return error(404, 'NOT_FOUND', `No route ${req.method} ${path}`);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v2/`, apiKey, webhookSecret, shipments, requests,
    track(trackingCode, details, est) {
      for (const s of shipments.values()) {
        if (s.tracking_code !== trackingCode) continue;
        s.tracker.tracking_details = details.map((d) => ({ object: 'TrackingDetail', source: 'USPS', tracking_location: { object: 'TrackingLocation', city: 'SPRINGFIELD', state: 'IL', country: 'US', zip: '62701' }, ...d }));
        s.tracker.status = details.at(-1)?.status ?? s.tracker.status;
        if (est) s.tracker.est_delivery_date = est;
      }
    },
    sign: (body) => `hmac-sha256-hex=${createHmac('sha256', webhookSecret).update(body).digest('hex')}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
