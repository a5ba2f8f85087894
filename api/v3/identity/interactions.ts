import type { Request, Response, Router } from 'express';
import type { AppDeps } from '../../http/deps.ts';
import { readRawBody } from '../../http/body.ts';
import { nativePool } from '../../../db/pool.ts';
import { subjectOf } from '../../../domain/identity/oidc-accounts.ts';
import { checkSignIn } from '../../../domain/identity/sign-in.ts';
import type { LoginThrottle } from '../../../domain/identity/throttle.ts';
import { ApiError } from '../../../platform/errors.ts';
import { escapeHtml } from './html.ts';
import { OAUTH_PATH, page, permissionScopesOf, type OidcServer } from './oidc.ts';
import { SMALL_BODY_LIMIT } from './body.ts';
import { clientIp, methodNotAllowed } from './session.ts';

/**
 * The provider's interactions: the sign-in form (the dashboard's users, their password, the same
 * throttle as POST /dashboard/session) and the consent form for third-party clients. Plain HTML
 * forms, no scripts: labels on every field, errors announced with role="alert".
 *
 * CSRF: each form carries an HMAC of the interaction's uid (OidcServer.formToken); the provider
 * also binds the interaction to its own cookie (SameSite=Lax), which a cross-site page cannot send
 * with a POST.
 */
const UID = /^[\w-]{1,64}$/;

const SCOPE_TEXT: Record<string, string> = {
  openid: 'Know who you are (your user id)',
  email: 'See your email address',
  profile: 'See your name, account id and role',
  offline_access: 'Stay connected when you are not using it',
};

function describeScope(scope: string): string {
  if (SCOPE_TEXT[scope]) return SCOPE_TEXT[scope];
  const [area, access] = scope.split(':');
  return access === 'write' ? `Read and change ${area} data` : `Read ${area} data`;
}

function sendPage(res: Response, status: number, title: string, body: string): void {
  res.status(status).setHeader('Cache-Control', 'no-store');
  res.type('html').send(page(title, body));
}

async function readForm(req: Request): Promise<URLSearchParams> {
  if (!/^application\/x-www-form-urlencoded\b/i.test(req.headers['content-type'] ?? '')) {
    throw new ApiError({
      status: 415, code: 'unsupported_media_type', title: 'Unsupported Media Type',
      detail: 'The sign-in and consent forms are posted as application/x-www-form-urlencoded.',
      suggestion: 'Submit the form from the page that showed it.',
    });
  }
  return new URLSearchParams((await readRawBody(req, SMALL_BODY_LIMIT)).toString('utf8'));
}

interface LoginView { uid: string; token: string; client: string; email?: string; accountId?: string; error?: string }

function loginForm(v: LoginView): string {
  const action = `${OAUTH_PATH}/interaction/${v.uid}/login`;
  return `<h1>Sign in to Business Platform</h1>
<p><strong>${escapeHtml(v.client)}</strong> asks you to sign in.</p>
${v.error ? `<p role="alert" id="form-error">${escapeHtml(v.error)}</p>` : ''}
<form method="post" action="${escapeHtml(action)}" ${v.error ? 'aria-describedby="form-error"' : ''}>
  <input type="hidden" name="csrf_token" value="${escapeHtml(v.token)}">
  <p><label for="email">Email</label><br>
  <input id="email" name="email" type="email" autocomplete="username" required maxlength="254" value="${escapeHtml(v.email ?? '')}" ${v.email ? '' : 'autofocus'}></p>
  <p><label for="password">Password</label><br>
  <input id="password" name="password" type="password" autocomplete="current-password" required maxlength="256" ${v.email ? 'autofocus' : ''}></p>
  <p><label for="account_id">Account id <span>(optional: when you belong to several accounts)</span></label><br>
  <input id="account_id" name="account_id" type="text" maxlength="64" value="${escapeHtml(v.accountId ?? '')}"></p>
  <p><button type="submit">Sign in</button></p>
</form>
<form method="post" action="${escapeHtml(`${OAUTH_PATH}/interaction/${v.uid}/abort`)}">
  <input type="hidden" name="csrf_token" value="${escapeHtml(v.token)}">
  <p><button type="submit">Cancel</button></p>
</form>`;
}

function consentForm(v: { uid: string; token: string; client: string; scopes: string[] }): string {
  return `<h1>Allow access?</h1>
<p><strong>${escapeHtml(v.client)}</strong> asks to:</p>
<ul>${v.scopes.map((s) => `<li>${escapeHtml(describeScope(s))} <code>${escapeHtml(s)}</code></li>`).join('')}</ul>
<form method="post" action="${escapeHtml(`${OAUTH_PATH}/interaction/${v.uid}/confirm`)}">
  <input type="hidden" name="csrf_token" value="${escapeHtml(v.token)}">
  <p><button type="submit">Allow</button></p>
</form>
<form method="post" action="${escapeHtml(`${OAUTH_PATH}/interaction/${v.uid}/abort`)}">
  <input type="hidden" name="csrf_token" value="${escapeHtml(v.token)}">
  <p><button type="submit">Deny</button></p>
</form>`;
}

const expired = (res: Response) => sendPage(res, 400, 'Sign-in expired', `<h1>This sign-in has expired</h1>
<p role="alert">The sign-in page is no longer valid (it timed out, was already used, or cookies are blocked).</p>
<p>Go back to the application and start again.</p>`);

const csrfFailed = (res: Response) => sendPage(res, 403, 'Form expired', `<h1>The form could not be accepted</h1>
<p role="alert">The form's security token is missing or wrong. Reload the sign-in page and try again.</p>`);

export function mountInteractions(router: Router, deps: AppDeps, oidc: OidcServer, throttle: LoginThrottle): void {
  /** The interaction the request's cookie opens for `uid`, or null (expired, another browser's). */
  async function details(req: Request) {
    const uid = req.params.uid;
    if (typeof uid !== 'string' || !UID.test(uid)) return null;
    const provider = await oidc.provider(req);
    try {
      const found = await provider.interactionDetails(req, req.res!);
      if (found.uid !== uid) return null;
      const client = await provider.Client.find(String(found.params.client_id));
      return { provider, interaction: found, clientName: client?.clientName ?? String(found.params.client_id) };
    } catch {
      return null;
    }
  }

  function missingScopes(prompt: { details: Record<string, unknown> }): string[] {
    const oidcScopes = (prompt.details.missingOIDCScope as string[] | undefined) ?? [];
    const resource = Object.values((prompt.details.missingResourceScopes as Record<string, string[]> | undefined) ?? {}).flat();
    return [...new Set([...oidcScopes, ...resource])];
  }

  // One handler per path, dispatching on the method (as /dashboard/session does): these pages are
  // not /v3 routes, so they stay out of the OpenAPI document, whose test lists method routes.
  const actions: Record<string, (req: Request, res: Response) => Promise<void>> = {};
  router.all(`${OAUTH_PATH}/interaction/:uid`, (req, res) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') throw methodNotAllowed(`${OAUTH_PATH}/interaction/{uid}`, 'GET');
    return show(req, res);
  });
  router.all(`${OAUTH_PATH}/interaction/:uid/:action`, (req, res, next) => {
    const action = Object.hasOwn(actions, req.params.action!) ? actions[req.params.action!] : undefined;
    if (!action) return next();
    if (req.method !== 'POST') throw methodNotAllowed(`${OAUTH_PATH}/interaction/{uid}/${req.params.action}`, 'POST');
    return action(req, res);
  });

  async function show(req: Request, res: Response): Promise<void> {
    const found = await details(req);
    if (!found) return expired(res);
    const { interaction, clientName } = found;
    const token = oidc.formToken(interaction.uid);
    if (interaction.prompt.name === 'login') {
      return sendPage(res, 200, 'Sign in', loginForm({ uid: interaction.uid, token, client: clientName }));
    }
    sendPage(res, 200, 'Allow access', consentForm({ uid: interaction.uid, token, client: clientName, scopes: missingScopes(interaction.prompt) }));
  }

  actions.login = async (req, res) => {
    const form = await readForm(req);
    const found = await details(req);
    if (!found) return expired(res);
    const { provider, interaction, clientName } = found;
    if (!oidc.checkFormToken(interaction.uid, form.get('csrf_token'))) return csrfFailed(res);
    if (interaction.prompt.name !== 'login') return expired(res);
    const email = (form.get('email') ?? '').slice(0, 254);
    const accountId = (form.get('account_id') ?? '').trim().slice(0, 64) || undefined;
    const view = { uid: interaction.uid, token: oidc.formToken(interaction.uid), client: clientName, email, accountId };
    // eslint-disable-next-line no-control-regex
    if (/[\u0000-\u001f\u007f]/.test(`${email}${form.get('password') ?? ''}${accountId ?? ''}`)) {
      return sendPage(res, 400, 'Sign in', loginForm({ ...view, error: 'The email, password or account id contains a control character; type them again.' }));
    }
    try {
      const who = await checkSignIn(await nativePool(deps.orm), throttle, {
        email, password: (form.get('password') ?? '').slice(0, 256), accountId, ip: clientIp(req),
      });
      await provider.interactionFinished(req, res, { login: { accountId: subjectOf(who.userId, who.accountId) } }, { mergeWithLastSubmission: false });
    } catch (err) {
      if (!(err instanceof ApiError) || !['sign_in_failed', 'sign_in_throttled'].includes(err.code)) throw err;
      for (const [name, value] of Object.entries(err.headers ?? {})) res.setHeader(name, value);
      const message = err.code === 'sign_in_failed'
        ? 'The email or password is wrong, or you are no member of that account.'
        : `Too many failed sign-ins. ${err.suggestion}`;
      sendPage(res, err.status, 'Sign in', loginForm({ ...view, error: message }));
    }
  };

  actions.confirm = async (req, res) => {
    const form = await readForm(req);
    const found = await details(req);
    if (!found) return expired(res);
    const { provider, interaction } = found;
    if (!oidc.checkFormToken(interaction.uid, form.get('csrf_token'))) return csrfFailed(res);
    if (interaction.prompt.name !== 'consent' || !interaction.session?.accountId) return expired(res);
    const { details: d } = interaction.prompt;
    const grant = interaction.grantId
      ? await provider.Grant.find(interaction.grantId)
      : new provider.Grant({ accountId: interaction.session.accountId, clientId: String(interaction.params.client_id) });
    if (!grant) return expired(res);
    const missingOidc = (d.missingOIDCScope as string[] | undefined) ?? [];
    if (missingOidc.length) grant.addOIDCScope(missingOidc.join(' '));
    const missingClaims = (d.missingOIDCClaims as string[] | undefined) ?? [];
    if (missingClaims.length) grant.addOIDCClaims(missingClaims);
    for (const [indicator, scopes] of Object.entries((d.missingResourceScopes as Record<string, string[]> | undefined) ?? {})) {
      const allowed = permissionScopesOf(scopes);
      if (allowed.length) grant.addResourceScope(indicator, allowed.join(' '));
    }
    const grantId = await grant.save();
    await provider.interactionFinished(req, res, { consent: interaction.grantId ? {} : { grantId } }, { mergeWithLastSubmission: true });
  };

  actions.abort = async (req, res) => {
    const form = await readForm(req);
    const found = await details(req);
    if (!found) return expired(res);
    if (!oidc.checkFormToken(found.interaction.uid, form.get('csrf_token'))) return csrfFailed(res);
    await found.provider.interactionFinished(req, res, {
      error: 'access_denied', error_description: 'The user cancelled the sign-in or denied access.',
    }, { mergeWithLastSubmission: false });
  };
}
