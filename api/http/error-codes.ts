/**
 * Every `code` a problem document can carry, with the page `GET /docs/errors/{code}` serves for it
 * (the problem's `type` URL). test/api/error-pages.test.ts scans the source for the codes the server
 * constructs and fails when one has no entry here.
 */
export interface ErrorCodeDoc {
  /** The HTTP status it comes with. */
  status: number;
  title: string;
  /** What happened, in general terms (the problem's `detail` says it for the one request). */
  meaning: string;
  /** What to do about it. */
  suggestion: string;
}

const doc = (status: number, title: string, meaning: string, suggestion: string): ErrorCodeDoc => ({ status, title, meaning, suggestion });

export const ERROR_CODES: Readonly<Record<string, ErrorCodeDoc>> = {
  // Authentication and permissions
  api_key_missing: doc(401, 'Unauthorized', 'The request carried no API key.', 'Send your key in the header `Authorization: Bearer <key>`.'),
  api_key_malformed: doc(401, 'Unauthorized', 'The Authorization header is not a Bearer key of a known form (bp_live_…, bp_test_…, bp_rk_live_…, bp_rk_test_…).', 'Copy the whole key text, prefix included, into `Authorization: Bearer <key>`.'),
  api_key_invalid: doc(401, 'Unauthorized', 'No API key with this text exists.', 'Check the key for typos, or create a new key.'),
  api_key_expired: doc(401, 'Unauthorized', 'The API key passed its expiration date.', 'Create a new key and use it instead.'),
  api_key_revoked: doc(401, 'Unauthorized', 'The API key was revoked.', 'Create a new key and use it instead.'),
  permission_denied: doc(403, 'Forbidden', 'The key (or OAuth access token) is valid but lacks the permission (`<area>:<read|write>`) the operation needs; `detail` and `required_permission` name it.', 'Use a key with that permission, or add it to the restricted key; with OAuth, authorize again asking for that scope.'),
  test_mode_only: doc(403, 'Forbidden', 'The operation exists only in test mode (for example test clocks).', 'Use a test key (bp_test_… or bp_rk_test_…).'),

  // The request itself
  validation_failed: doc(422, 'Validation Failed', 'One or more fields are invalid; `errors` lists every one, each with its `path` and `message`.', 'Fix every field listed in `errors` and send the request again.'),
  invalid_json: doc(400, 'Bad Request', 'The body is not valid JSON, or is nested too deeply.', 'Send a well-formed JSON body (at most 64 levels of nesting).'),
  json_too_deep: doc(400, 'Bad Request', 'The JSON body is nested deeper than 64 levels (objects and arrays).', 'Flatten the document: no request needs more than a few levels of nesting.'),
  invalid_path: doc(400, 'Bad Request', 'The path could not be decoded (a malformed percent-encoding).', 'Percent-encode path segments correctly.'),
  payload_too_large: doc(413, 'Payload Too Large', 'The body is larger than the operation accepts.', 'Send a smaller body; split bulk changes across several requests.'),
  unsupported_media_type: doc(415, 'Unsupported Media Type', 'The body is not JSON.', 'Send the body as JSON with `Content-Type: application/json`.'),
  not_acceptable: doc(406, 'Not Acceptable', 'The Accept header names no format the API can answer in.', 'Send `Accept: application/json` (the default) or `Accept: application/xml`.'),
  route_not_found: doc(404, 'Not Found', 'No operation exists at this path; `suggestion` names the nearest one.', 'Check the path against the API reference at /docs.'),
  method_not_allowed: doc(405, 'Method Not Allowed', 'The path exists but not with this method; the `Allow` header lists the methods it takes.', 'Use one of the methods in `Allow`.'),
  version_gone: doc(410, 'Gone', 'API v2 reached its end of support and no longer answers.', 'Move to /v3; the `Link` header names the successor path.'),
  not_found: doc(404, 'Not Found', 'No resource with this id exists for this account and mode (another account\'s, or the other mode\'s, answers the same).', 'Check the id, and that the key\'s mode (live or test) matches the mode the resource was created in.'),

  // Limits and idempotency
  rate_limited: doc(429, 'Too Many Requests', 'The key used up its requests for the minute or the day (`detail` says which).', 'Wait for the seconds in `Retry-After`, then retry.'),
  concurrency_limited: doc(429, 'Too Many Requests', 'The key has too many requests in flight at once.', 'Wait for a running request to finish (see `Retry-After`), then retry.'),
  idempotency_key_invalid: doc(400, 'Bad Request', 'The Idempotency-Key header is empty or longer than 255 characters.', 'Use a UUID (v4) per logical operation as the Idempotency-Key.'),
  idempotency_key_reused: doc(422, 'Idempotency Key Reused', 'The Idempotency-Key was already used with a different request (method, path or body).', 'Use a new key for a new request; reuse a key only to retry the exact same request.'),
  idempotency_key_in_use: doc(409, 'Conflict', 'A request with this Idempotency-Key is still being processed.', 'Wait a moment and retry with the same key to receive the original response.'),

  // State and business rules
  invalid_state_transition: doc(409, 'Conflict', 'The resource\'s current state (`current_state`) does not allow this change.', 'Read the resource, and send only the transitions its state allows.'),
  request_rejected: doc(422, 'Unprocessable Content', 'A business rule refused the request.', 'Read `detail`, change the request accordingly and send it again.'),
  default_template: doc(409, 'Conflict', "The invoice template is the account's default while other templates exist; an account keeps one default.", 'Make another template the default (PATCH is_default: true), then archive this one.'),
  subscription_not_active: doc(409, 'Conflict', 'The subscription takes no more usage in its status (`subscription_status`).', 'Record usage only for trialing, active, paused or past_due subscriptions.'),
  insufficient_stock: doc(409, 'Conflict', 'Not enough units are available to reserve (`sku`, `requested`, `available`).', 'Lower the quantity, or add stock first.'),
  sku_already_exists: doc(409, 'Conflict', 'Another product of the store already has this SKU.', 'Choose another SKU, or update the existing product.'),
  warehouse_code_taken: doc(409, 'Conflict', 'Another warehouse already has this code.', 'Choose another code, or use the existing warehouse.'),
  marketplace_not_supported: doc(404, 'Not Found', 'No connector exists for this marketplace.', 'Use one of the marketplaces the API reference lists.'),
  order_payment_invalid: doc(422, 'Payment Not Usable', 'The `payment_id` given for an order is not a succeeded payment of this account and mode for the order\'s amount and currency.', 'Pay the order\'s exact total in its currency, then send that payment\'s id.'),
  order_payment_used: doc(409, 'Conflict', 'The payment already pays another order (`order_id`); one payment pays one order.', 'Create a new payment for this order.'),

  // Payments
  card_declined: doc(402, 'Payment Required', 'The card was declined; `decline_code` says why (Stripe\'s decline codes).', 'Follow the `suggestion`; usually ask the customer for another card.'),
  balance_insufficient: doc(402, 'Payment Required', 'A marketplace split without a card is paid out of the platform\'s gateway balance, which has less available in the currency than the split pays out; `available` gives the balance in minor units. Nothing was transferred (or what was, was reversed).', 'Fund the split with a card (payment_method, or a customer_id with a saved card), or wait until the balance covers it and retry with a new Idempotency-Key.'),
  card_invalid: doc(422, 'Card Invalid', 'The card details are invalid (number, expiry or CVC).', 'Check the card details and send them again.'),
  gateway_not_configured: doc(503, 'Service Unavailable', 'The payment gateway chosen is not configured on this server.', 'Use a configured gateway, or configure this one (see docs/payments.md).'),
  payment_not_refundable: doc(409, 'Conflict', 'Only a succeeded payment can be refunded.', 'Refund the payment once it has succeeded.'),
  refund_exceeds_remaining: doc(422, 'Refund Exceeds Remaining Amount', 'The refund is larger than what is left to refund on the payment.', 'Refund at most the `remaining` amount.'),
  refund_failed: doc(422, 'Refund Failed', 'The gateway refused the refund.', 'Read `detail`; retry later or refund by another means.'),
  transfers_not_supported: doc(422, 'Transfers Not Supported', 'No gateway this marketplace split could go to makes transfers (Adyen and PayPal make none here), or the customer\'s saved card belongs to one that makes none; `detail` says which.', 'Add a routing rule naming a gateway with transfers (sandbox, stripe), or send a payment_method with the split.'),
  transfer_failed: doc(422, 'Transfer Failed', 'The gateway refused a marketplace transfer.', 'Check the connected account ids and amounts, then retry.'),

  // Shipping
  address_rejected: doc(422, 'Address Rejected', 'The carrier cannot deliver to (or collect from) the address; `errors` names it.', 'Check the street, city and postal code named in `errors`.'),
  service_not_offered: doc(422, 'Service Not Offered', 'The carrier does not offer the service level for this route.', 'Choose another service_level or carrier (GET /v3/shipping/rates).'),
  package_exceeds_limits: doc(422, 'Package Exceeds Carrier Limits', 'A package is heavier, larger or more numerous than the carrier takes.', 'Split the package, or choose a carrier with higher limits.'),
  carrier_rejected: doc(422, 'Carrier Rejected the Request', 'The carrier refused the request for another reason (`detail`).', 'Check the request against the carrier\'s rules, or choose another carrier.'),
  carrier_unavailable: doc(503, 'Service Unavailable', 'The carrier is down or did not answer; nothing was bought.', 'Retry later with the same Idempotency-Key, or choose another carrier.'),
  carrier_timeout: doc(503, 'Service Unavailable', 'The carrier did not answer in time; nothing was bought.', 'Retry later with the same Idempotency-Key, or choose another carrier.'),
  carrier_not_configured: doc(503, 'Service Unavailable', 'No carrier is configured for this account and mode on this server.', 'Configure a carrier (EASYPOST_API_KEY, or the account\'s carriers through the admin API).'),
  carrier_signature_invalid: doc(401, 'Unauthorized', 'A carrier push did not carry a valid signature of its body.', 'Sign the exact JSON body with the carrier\'s push secret (docs/shipping.md).'),
  pickup_already_scheduled: doc(409, 'Conflict', 'A shipment is already in a scheduled pickup (`pickup_id`).', 'Cancel that pickup first, or leave the shipment out.'),
  // ERP
  ledger_account_exists: doc(409, 'Conflict', 'The chart of accounts already has an account with this code.', 'Choose another code, or use the existing account.'),
  base_currency_locked: doc(409, 'Conflict', 'The ledger already holds transactions, so its base currency can no longer change.', 'Keep the base currency (set exchange rates for other currencies instead).'),
  self_approval_forbidden: doc(403, 'Forbidden', 'The API key that created a purchase order cannot approve or reject it.', 'Ask an approver with another key.'),
  already_approved: doc(409, 'Conflict', 'This key already approved the purchase order at an earlier level; each level needs a different approver.', 'Ask a different approver for the next level.'),
  approver_not_assigned: doc(403, 'Forbidden', 'An operator assigned the pending approval level to another key.', 'Ask the assigned approver, or have the step reassigned.'),
  three_way_match_failed: doc(422, 'Unprocessable Content', 'The vendor bill differs from the received value of the order by more than the match tolerance.', 'Check the bill against the receipts; get a corrected bill or record the missing receipt.'),
  no_test_clock: doc(409, 'Conflict', 'The resource (a purchase order, a warehouse transfer, a cycle count) runs on real time; it has no test clock to advance.', 'Create it in test mode with test_clock_time.'),
  vendor_rejected: doc(422, 'Vendor Rejected', 'The vendor refused the purchase order.', 'Choose another vendor, or contact this one.'),
  // Rewards
  insufficient_points: doc(409, 'Conflict', 'The customer\'s available points (`points_balance`) do not cover the redemption, or a shortfall from reversed points (`shortfall_points`) blocks redemptions until earned back.', 'Redeem a cheaper reward, or award more points first.'),
  reward_unavailable: doc(409, 'Conflict', 'The reward cannot be redeemed now: it is archived, expired or out of stock (`current_state`).', 'Redeem an active reward in stock (GET /v3/rewards/catalog).'),

  // Analytics
  exchange_rate_missing: doc(422, 'Exchange Rate Missing', 'Amounts in some currency cannot be converted into the reporting currency: no exchange rate between them is stored (`missing_rates`).', 'Store the rates with PUT /v3/catalog/exchange-rates, or ask for another currency.'),
  insufficient_history: doc(422, 'Not Enough History', 'Forecasting needs more revenue history than the account has (`required`, `available`, `unit`).', 'Try again when more days of revenue exist, or use a finer granularity.'),
  report_not_ready: doc(409, 'Conflict', 'The report has no file yet (or failed, or was canceled); `current_state` says which.', 'Poll GET /v3/analytics/reports/{id} until status is succeeded.'),
  report_expired: doc(410, 'Gone', 'The report\'s file was deleted at the end of its retention period.', 'Generate the report again.'),
  download_url_invalid: doc(403, 'Forbidden', 'The signature of the download URL does not match this report.', 'Use the download_url of GET /v3/analytics/reports/{id} unchanged.'),
  download_url_expired: doc(403, 'Forbidden', 'The download URL has expired.', 'Get a fresh download_url from GET /v3/analytics/reports/{id}.'),
  download_url_unsigned: doc(401, 'Unauthorized', 'A report link outside /v3 carries no signature (and such links take no API key).', 'Use the download_url of GET /v3/analytics/reports/{id} unchanged, or GET /v3/analytics/reports/{id}/download with an API key.'),

  // Webhooks
  webhook_url_forbidden: doc(422, 'Validation Failed', 'The webhook URL points at a private, loopback or otherwise forbidden address.', 'Use a public HTTPS URL.'),
  webhook_endpoint_disabled: doc(409, 'Conflict', 'The webhook endpoint is disabled.', 'Enable the endpoint first.'),

  // Warehouses
  order_on_pick_list: doc(409, 'Conflict', 'An order is already on an open or picking pick list (`order_ids` names them).', 'Complete or cancel that pick list first, or leave these orders out.'),
  transfer_reference_exists: doc(409, 'Conflict', 'Another transfer already has this reference (`transfer_id` names it).', 'Use that transfer, or choose another reference.'),
  realtime_ticket_invalid: doc(401, 'Unauthorized', 'The realtime ticket is unknown, tampered with or expired.', 'Create a new ticket with POST /v3/inventory/realtime/tickets and connect within 60 seconds.'),

  // The server
  service_unavailable: doc(503, 'Service Unavailable', 'PostgreSQL or Temporal is unreachable; nothing was changed.', 'Retry after the seconds in `Retry-After` with the same Idempotency-Key.'),
  // Communications
  telephony_not_configured: doc(503, 'Service Unavailable', 'No live telephony carrier is configured on this server; nothing was bought, dialed or sent.', 'Use a test key (the sandbox carrier), or configure a live carrier.'),
  no_numbers_available: doc(409, 'Conflict', 'The carrier has no number left for that area code, country or type; `suggestions` lists nearby area codes.', 'Provision in one of the suggested area codes, or search with GET /v3/communications/numbers/available.'),
  regulatory_address_required: doc(422, 'Regulatory Address Required', 'International numbers need the account\'s address on file.', 'Put it with PUT /v3/communications/address, then provision again.'),
  recording_not_found: doc(404, 'Not Found', 'The call was not recorded (record_call was false).', 'Set record_call to true when placing calls whose recording you need.'),
  recording_not_ready: doc(404, 'Not Found', 'The call has not completed yet, or was never answered, so there is no recording.', 'Wait for call.recording.ready (or poll the call until recording.status is ready).'),
  extension_unavailable: doc(409, 'Conflict', 'The PBX extension a call should connect is busy, dnd or offline (`current_state`).', 'Wait until it is available, or call another extension.'),
  extension_taken: doc(409, 'Conflict', 'The PBX already has an extension with that number.', 'Choose another extension number, or update the existing one.'),
  messaging_app_not_found: doc(404, 'Not Found', 'No messaging app by that name; `messaging_apps` lists them.', 'Use whatsapp, sms or messenger.'),
  outside_service_window: doc(422, 'Outside Service Window', 'Free text on WhatsApp and Messenger is allowed only within 24 hours of the recipient\'s last message.', 'Send an approved template instead, or wait for the recipient to write.'),
  signature_invalid: doc(401, 'Unauthorized', 'An inbound message was not signed with the receiving number\'s inbound_secret, or its timestamp is too old.', 'Sign `webhook-id.webhook-timestamp.body` with the number\'s inbound_secret (Standard Webhooks).'),
  // Identity: dashboard sign-in and OAuth access tokens
  sign_in_failed: doc(401, 'Unauthorized', 'The email or password is wrong, or the user is no member of the account named (one answer for all three).', 'Check the email and password; an account owner can add you as a member.'),
  sign_in_throttled: doc(429, 'Too Many Requests', 'Too many failed sign-ins for this email or from this address in the current window.', 'Wait the seconds in `Retry-After` before trying again.'),
  session_required: doc(401, 'Unauthorized', 'No valid dashboard session: not signed in, or the session expired, went idle or was revoked.', 'Sign in with POST /dashboard/session.'),
  csrf_token_invalid: doc(403, 'Forbidden', 'A state-changing dashboard request lacked the session\'s X-CSRF-Token header, or sent another value.', 'Send the csrf_token from the sign-in answer in the X-CSRF-Token header.'),
  user_exists: doc(409, 'Conflict', 'A dashboard user with this email already exists.', 'Add the existing user to the account as a member instead.'),
  member_exists: doc(409, 'Conflict', 'The user is already a member of this account.', 'Change the member\'s role instead.'),
  access_token_invalid: doc(401, 'Unauthorized', 'The Bearer value has the form of an OAuth access token, but no such token exists.', 'Send the whole access_token from the token endpoint (/oauth/token), or get a new one.'),
  access_token_revoked: doc(401, 'Unauthorized', 'The OAuth access token was revoked: by its client, by a reused refresh token, by the client\'s removal, or because the user left the account.', 'Get a new access token from /oauth/token.'),
  access_token_expired: doc(401, 'Unauthorized', 'The OAuth access token is past its lifetime (one hour).', 'Use the refresh token (grant_type=refresh_token), or the client credentials grant, to get a new one.'),
  last_owner: doc(409, 'Conflict', 'The change would leave the account without an owner.', 'Make another member an owner first.'),
  // AI (/v3/ai)
  ai_not_configured: doc(503, 'Service Unavailable', 'No language-model provider is configured on this server (a configuration problem: retrying will not help until it is set).', 'Set AI_PROVIDER (openai or openai-compatible), AI_MODEL and AI_API_KEY (or OPENAI_API_KEY), plus AI_BASE_URL for an OpenAI-compatible server; see docs/ai.md.'),
  ai_budget_exceeded: doc(429, 'Too Many Requests', 'The API key used its monthly token budget for /v3/ai (tokens in and out, per calendar month in UTC); `Retry-After` is the time until the month ends.', 'Wait for the next month, use another key, or raise AI_MONTHLY_TOKEN_BUDGET; GET /v3/ai/usage shows what is left.'),
  ai_provider_unavailable: doc(503, 'Service Unavailable', 'The language-model provider failed, refused or did not answer in time; nothing was changed.', 'Retry after the seconds in `Retry-After`.'),
  ai_invalid_output: doc(502, 'Bad Gateway', 'The language model answered with output that does not match the documented structure, even after validation; nothing was changed.', 'Retry the request; if it keeps failing, try another model (AI_MODEL).'),
  internal_error: doc(500, 'Internal Server Error', 'Something went wrong on our side; the request was not completed.', 'Retry with the same Idempotency-Key; if it keeps failing, contact support with the request_id.'),
};

/** The path of a code's page; a problem's `type` is this, made absolute with the request's origin. */
export const ERROR_DOCS_PATH = '/docs/errors/';
