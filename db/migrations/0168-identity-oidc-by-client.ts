import { Migration } from '@mikro-orm/migrations';

/**
 * Revoking an OAuth client revokes every provider row issued to it (domain/identity/clients.ts:
 * `payload->>'clientId' = $1 and revoked_at is null`). No index served that, so each revocation
 * read every token, grant and session of the installation. The expression index below answers it
 * with the rows of that client still unrevoked; the statement is unchanged, so processes of the
 * previous release (a rolling deploy) write rows it finds. `if not exists`: see migration 0162.
 */
export class Migration0168IdentityOidcByClient extends Migration {
  override name = '0168-identity-oidc-by-client';

  override up(): void {
    this.addSql(`create index if not exists oidc_models_client on oidc_models ((payload ->> 'clientId')) where revoked_at is null;`);
  }

  override down(): void {
    this.addSql('drop index if exists oidc_models_client;');
  }
}
