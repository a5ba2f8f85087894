import type { Request, Response } from 'express';
import type { Pool } from 'pg';
import type * as OidcLibrary from 'oidc-provider';
import type Provider from 'oidc-provider';
import type { Configuration, KoaContextWithOIDC } from 'oidc-provider';
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { AppDeps } from '../../http/deps.ts';
import { isDatabaseDown } from '../../http/problems.ts';
import { nativePool } from '../../../db/pool.ts';
import { hashClientSecret, OIDC_SCOPES } from '../../../domain/identity/clients.ts';
import { findOidcAccount, parseSubject } from '../../../domain/identity/oidc-accounts.ts';
import { PostgresOidcAdapter, purgeExpiredOidcModels, type AdapterPayload } from '../../../domain/identity/oidc-adapter.ts';
import { ensureProviderKeys, loadProviderKeys, type ProviderKeys } from '../../../domain/identity/signing-keys.ts';
import { escapeHtml } from './html.ts';

/** Where the provider is mounted; the issuer is `<origin>/oauth`. */
export const OAUTH_PATH = '/oauth';

/** Lifetimes, in seconds (docs/oauth.md). */
export const TOKEN_TTL = {
  AccessToken: 3600, ClientCredentials: 3600, AuthorizationCode: 60, IdToken: 3600,
  RefreshToken: 14 * 86_400, Interaction: 3600, Session: 12 * 3600, Grant: 14 * 86_400,
} as const;

/** The client's own metadata, beyond the standard members (read by the consent and admission logic). */
interface PlatformClientMetadata { bp_account_id: string; bp_livemode: boolean; bp_first_party: boolean }

type ClientRow = Parameters<ConstructorParameters<typeof PostgresOidcAdapter>[2]['clientMetadata']>[0];


/**
 * oidc-provider (with Koa and jose, a few hundred modules), loaded when /oauth is first used rather
 * than by every process that loads the areas (workers, the CLI) or serves only /v3.
 */
let oidcLibrary: typeof OidcLibrary | undefined;
const loadOidcLibrary = async () => (oidcLibrary ??= await import('oidc-provider'));

/** A registered client (oauth_clients) as oidc-provider's client metadata. */
export function clientMetadata(row: ClientRow): AdapterPayload {
  const nativeApp = row.redirect_uris.some((u) => !/^https?:/.test(u));
  return {
    client_id: row.id,
    // The SHA-256 of the secret: `compareClientSecret` below hashes what the client presents.
    ...(row.secret_hash ? { client_secret: row.secret_hash } : {}),
    client_name: row.name,
    redirect_uris: row.redirect_uris,
    grant_types: row.grant_types,
    response_types: row.grant_types.includes('authorization_code') ? ['code'] : [],
    token_endpoint_auth_method: row.type === 'public' ? 'none' : 'client_secret_basic',
    application_type: nativeApp ? 'native' : 'web',
    scope: row.scopes.join(' '),
    bp_account_id: row.account_id, bp_livemode: row.livemode, bp_first_party: row.first_party,
  } satisfies AdapterPayload & PlatformClientMetadata;
}

function platformMetadata(client: { metadata(): Record<string, unknown> }): PlatformClientMetadata {
  return client.metadata() as unknown as PlatformClientMetadata;
}

/** The permission scopes (`<scope>:read|write`) among `scopes`. */
export function permissionScopesOf(scopes: Iterable<string>): string[] {
  return [...scopes].filter((s) => /^[a-z][a-z_]*:(read|write)$/.test(s));
}

function sameSecret(stored: string | undefined, presented: string): boolean {
  if (!stored) return false;
  const a = Buffer.from(stored);
  const b = Buffer.from(hashClientSecret(presented));
  return a.length === b.length && timingSafeEqual(a, b);
}

interface Built { provider: Provider; fingerprint: string; callback: ReturnType<Provider['callback']> }

/**
 * The platform's OpenID Provider (oidc-provider), one per issuer. It is rebuilt when the keys change
 * (a rotation by any API process: the key set is read on each /oauth request), so every process
 * publishes a new key and starts signing with it at the same moments.
 */
export class OidcServer {
  private readonly deps: AppDeps;
  private readonly built = new Map<string, Built>();
  private keysReady: Promise<void> | null = null;
  /** The cookie secrets last read (newest first): they also key the interaction forms' CSRF tokens. */
  private cookieKeys: string[] = [];
  private lastPurge = 0;

  constructor(deps: AppDeps) {
    this.deps = deps;
  }

  private pool(): Promise<Pool> {
    return nativePool(this.deps.orm);
  }

  /**
   * The issuer for a request: PUBLIC_URL's, or (unset: development and tests) the request's own
   * origin. Without PUBLIC_URL a few issuers are kept at most, so Host headers cannot fill memory.
   */
  issuerFor(req: Request): string {
    const configured = this.deps.config.PUBLIC_URL;
    if (configured) return `${configured.replace(/\/$/, '')}${OAUTH_PATH}`;
    return `${req.protocol}://${req.get('host') ?? 'localhost'}${OAUTH_PATH}`;
  }

  /** The resource indicator of the /v3 API: its tokens' audience. */
  static apiResource(issuer: string): string {
    return `${new URL(issuer).origin}/v3`;
  }

  async provider(req: Request): Promise<Provider> {
    return (await this.current(req)).provider;
  }

  private async current(req: Request): Promise<Built> {
    const pool = await this.pool();
    this.keysReady ??= ensureProviderKeys(pool).catch((err: unknown) => {
      this.keysReady = null;
      throw err;
    });
    await this.keysReady;
    const keys = await loadProviderKeys(pool);
    this.cookieKeys = keys.cookieKeys;
    // Expired tokens, codes and sessions are deleted now and then (at most hourly per process, in
    // the background: a failure is logged and retried an hour later).
    if (Date.now() - this.lastPurge > 3600_000) {
      this.lastPurge = Date.now();
      purgeExpiredOidcModels(pool).catch((err: unknown) => this.deps.logger.warn('oauth: expired rows not purged', { error: err }));
    }
    const issuer = this.issuerFor(req);
    const cached = this.built.get(issuer);
    if (cached?.fingerprint === keys.fingerprint) return cached;
    await loadOidcLibrary();
    const provider = this.build(issuer, keys);
    const built = { provider, fingerprint: keys.fingerprint, callback: provider.callback() };
    this.built.delete(issuer);
    this.built.set(issuer, built);
    while (this.built.size > 8) this.built.delete(this.built.keys().next().value!);
    return built;
  }

  /**
   * The CSRF token of an interaction's forms: an HMAC of its uid under the newest cookie secret
   * (checked against every secret still verifying, so a rotation does not break a form being filled).
   */
  formToken(uid: string): string {
    return createHmac('sha256', this.cookieKeys[0]!).update(`interaction:${uid}`).digest('base64url');
  }

  checkFormToken(uid: string, token: unknown): boolean {
    if (typeof token !== 'string' || !/^[\w-]{43}$/.test(token)) return false;
    return this.cookieKeys.some((key) => {
      const expected = createHmac('sha256', key).update(`interaction:${uid}`).digest('base64url');
      return timingSafeEqual(Buffer.from(expected), Buffer.from(token));
    });
  }

  /** Hands a request under /oauth (path already relative to it) to the provider. */
  async handle(req: Request, res: Response): Promise<void> {
    await (await this.current(req)).callback(req, res);
  }

  private build(issuer: string, keys: ProviderKeys): Provider {
    const getPool = () => this.pool();
    const permissionScopes = this.deps.permissionScopes.flatMap((s) => [`${s}:read`, `${s}:write`]);
    const apiResource = OidcServer.apiResource(issuer);

    const configuration: Configuration = {
      adapter: (name: string) => new PostgresOidcAdapter(name, getPool, { clientMetadata }),
      jwks: { keys: keys.jwks as never },
      cookies: { keys: keys.cookieKeys },
      scopes: [...OIDC_SCOPES, ...permissionScopes],
      claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name', 'account_id', 'role'] },
      // Scope claims go in the ID token: access tokens are for /v3, not for the UserInfo endpoint.
      conformIdTokenClaims: false,
      responseTypes: ['code'],
      pkce: { required: () => true },
      ttl: { ...TOKEN_TTL },
      extraClientMetadata: { properties: ['bp_account_id', 'bp_livemode', 'bp_first_party'] },
      clientBasedCORS: (_ctx, origin, client) =>
        (client.redirectUris ?? []).some((uri) => URL.canParse(uri) && new URL(uri).origin === origin),
      async findAccount(_ctx, sub) {
        const account = await findOidcAccount(await getPool(), sub);
        if (!account) return undefined;
        return {
          accountId: sub,
          claims: () => ({ sub, email: account.email, email_verified: false, name: account.email, account_id: account.accountId, role: account.role }),
        };
      },
      interactions: { url: (_ctx, interaction) => `${OAUTH_PATH}/interaction/${interaction.uid}` },
      // Refresh tokens for every client allowed the grant (no offline_access and forced consent
      // needed), rotated at every use: a refresh token works once, and a reused one revokes the grant.
      issueRefreshToken: (_ctx, client) => client.grantTypeAllowed('refresh_token'),
      rotateRefreshToken: () => true,
      expiresWithSession: () => false,
      // The platform's own apps (first-party clients) are not asked for consent.
      async loadExistingGrant(ctx) {
        const { oidc } = ctx;
        const grantId = oidc.result?.consent?.grantId ?? oidc.session!.grantIdFor(oidc.client!.clientId);
        if (grantId) return oidc.provider.Grant.find(grantId);
        if (!platformMetadata(oidc.client!).bp_first_party || !oidc.session?.accountId) return undefined;
        const grant = new oidc.provider.Grant({ clientId: oidc.client!.clientId, accountId: oidc.session!.accountId });
        const requested = [...oidc.requestParamScopes];
        // The permission scopes are listed in `scopes` (discovery), so the provider counts them among
        // the "OIDC" scopes a grant must hold as well as the resource's.
        grant.addOIDCScope([...oidc.requestParamOIDCScopes].join(' '));
        const resource = permissionScopesOf(requested);
        if (resource.length) grant.addResourceScope(apiResource, resource.join(' '));
        await grant.save();
        return grant;
      },
      // Every access token carries the account and mode it acts in (see introspection).
      async extraTokenClaims(_ctx, token) {
        const client = token.clientId ? await _ctx.oidc.provider.Client.find(token.clientId) : undefined;
        if (!client) return undefined;
        const meta = platformMetadata(client);
        const sub = 'accountId' in token && typeof token.accountId === 'string' ? parseSubject(token.accountId) : null;
        return { account_id: sub?.accountId ?? meta.bp_account_id, mode: meta.bp_livemode ? 'live' : 'test' };
      },
      features: {
        devInteractions: { enabled: false },
        clientCredentials: { enabled: true },
        revocation: {
          enabled: true,
          // RFC 7009: a client revokes its own tokens only. Another's is refused (confidential) or
          // ignored (public: answered as if done, as the provider's default does).
          allowedPolicy(_ctx, client, token) {
            if (token.clientId === client.clientId) return true;
            if (client.clientAuthMethod === 'none') return false;
            throw new oidcLibrary!.errors.InvalidRequest('client is not authorized to revoke the presented token');
          },
        },
        introspection: {
          enabled: true,
          // A client introspects its own tokens and those of its account's other clients, never
          // another account's (the default lets any client introspect any token).
          async allowedPolicy(ctx, client, token) {
            if (token.clientId === client.clientId) return true;
            if (client.clientAuthMethod === 'none' || !token.clientId) return false;
            const owner = await ctx.oidc.provider.Client.find(token.clientId);
            return !!owner && platformMetadata(owner).bp_account_id === platformMetadata(client).bp_account_id;
          },
        },
        resourceIndicators: {
          enabled: true,
          // Every token is for /v3 unless another resource is asked for (none other exists).
          defaultResource: () => apiResource,
          useGrantedResource: () => true,
          getResourceServerInfo(_ctx, indicator, client) {
            if (indicator !== apiResource) throw new oidcLibrary!.errors.InvalidTarget(`the only resource is ${apiResource}`);
            return {
              audience: apiResource,
              scope: permissionScopesOf((client.scope ?? '').split(' ')).join(' '),
              accessTokenFormat: 'opaque',
              accessTokenTTL: TOKEN_TTL.AccessToken,
            };
          },
        },
      },
      renderError(ctx, out) {
        ctx.type = 'html';
        ctx.body = page('Sign-in error', `<h1>Something went wrong</h1>
<p><strong>${escapeHtml(String(out.error))}</strong>: ${escapeHtml(String(out.error_description ?? ''))}</p>
<p>Go back to the application and start the sign-in again.</p>`);
      },
    };

    const provider = new oidcLibrary!.default(issuer, configuration);
    // Behind a TLS-terminating proxy (PUBLIC_URL https), X-Forwarded-Proto makes cookies Secure.
    provider.proxy = !!this.deps.config.PUBLIC_URL?.startsWith('https:');
    // Client secrets are stored as SHA-256 (domain/identity/clients.ts): compare the presented one's hash.
    Object.defineProperty(provider.Client.prototype, 'compareClientSecret', {
      value(this: { clientSecret?: string }, presented: string) {
        return sameSecret(this.clientSecret, presented);
      },
    });
    // A database outage inside the provider (its adapter) is a 503 with Retry-After, in OAuth's own
    // error format (`temporarily_unavailable`), not a 500 server_error.
    provider.use(async (ctx, next) => {
      await next();
      if (ctx.state.bpDatabaseDown) {
        ctx.status = 503;
        ctx.set('Retry-After', '5');
        ctx.set('Cache-Control', 'no-store');
        ctx.body = { error: 'temporarily_unavailable', error_description: 'The database is unreachable; retry in a few seconds.' };
      }
    });
    provider.on('server_error', (ctx: KoaContextWithOIDC, err: Error) => {
      if (isDatabaseDown(err)) ctx.state.bpDatabaseDown = true;
      else this.deps.logger.error('oauth server error', { error: err });
    });
    return provider;
  }
}

/** A minimal accessible page around `body` (no scripts; the provider's and the interactions' pages). */
export function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)} · Business Platform</title></head>
<body><main>
${body}
</main></body></html>`;
}
