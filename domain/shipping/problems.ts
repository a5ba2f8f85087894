import { ApiError } from '../../platform/errors.ts';
import type { CarrierError } from './carriers/types.ts';

/** A carrier's refusal or outage as the problem document the API answers with. */
export function carrierProblem(err: CarrierError): ApiError {
  const errors = err.field ? [{ path: err.field, message: err.message }] : undefined;
  switch (err.code) {
    case 'address_rejected':
      return new ApiError({
        status: 422, code: 'address_rejected', title: 'Address Rejected', detail: err.message, errors,
        suggestion: 'Check the address named in `errors` (street, city, postal code) and send the request again.',
        extensions: { carrier: err.carrier },
      });
    case 'service_not_offered':
      return new ApiError({
        status: 422, code: 'service_not_offered', title: 'Service Not Offered', detail: err.message, errors,
        suggestion: 'Choose another service_level or carrier (GET /v3/shipping/rates lists what each carrier offers).',
        extensions: { carrier: err.carrier },
      });
    case 'package_exceeds_limits':
      return new ApiError({
        status: 422, code: 'package_exceeds_limits', title: 'Package Exceeds Carrier Limits', detail: err.message, errors,
        suggestion: 'Split the package, or choose a carrier with higher limits (docs/shipping.md lists them).',
        extensions: { carrier: err.carrier },
      });
    case 'carrier_timeout':
    case 'carrier_unavailable':
      return new ApiError({
        status: 503, code: err.code, title: 'Service Unavailable', detail: err.message,
        suggestion: 'Retry in a minute with the same Idempotency-Key, or choose another carrier.',
        headers: { 'Retry-After': '30' }, extensions: { carrier: err.carrier },
      });
    default:
      return new ApiError({
        status: 422, code: 'carrier_rejected', title: 'Carrier Rejected the Request', detail: err.message, errors,
        suggestion: 'Check the request against the carrier\'s rules, or choose another carrier.',
        extensions: { carrier: err.carrier },
      });
  }
}
