import { Migration } from '@mikro-orm/migrations';

/**
 * Key rotation for the OpenID Provider (domain/identity/signing-keys.ts): a new signing key is
 * published in the JWKS before it signs anything. `activates_at` is when it starts signing; until
 * then relying parties can fetch and cache it. 0091's rows (none in production yet) sign at once.
 */
export class Migration0092IdentityOauthKeyActivation extends Migration {
  override name = '0092-identity-oauth-key-activation';

  override up(): void {
    this.addSql(`
      alter table oauth_signing_keys add column activates_at timestamptz not null default now();
      create index oauth_signing_keys_kind on oauth_signing_keys (kind, activates_at desc);
    `);
  }

  override down(): void {
    this.addSql(`
      drop index if exists oauth_signing_keys_kind;
      alter table oauth_signing_keys drop column if exists activates_at;
    `);
  }
}
