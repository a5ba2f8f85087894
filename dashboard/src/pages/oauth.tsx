import { useState } from 'preact/hooks';
import { trpc, type Me, type Mode, type Outputs } from '../api.ts';
import type { PageProps } from '../app.tsx';
import { Alert, Loading, PageHeader, Table, formatDate, useAction, useLoad } from '../ui.tsx';

type Client = Outputs['oauthClients']['list'][number];
type Grant = Client['grant_types'][number];
const GRANTS: { value: Grant; label: string }[] = [
  { value: 'authorization_code', label: 'Authorization code (with PKCE): users sign in' },
  { value: 'refresh_token', label: 'Refresh tokens (rotated on use)' },
  { value: 'client_credentials', label: 'Client credentials: machine to machine' },
];

function CreateClientForm({ me, mode, onCreated, onCancel }: {
  me: Me; mode: Mode; onCreated: (client: Client, secret: string | null) => void; onCancel: () => void;
}) {
  const [name, setName] = useState('');
  const [type, setType] = useState<'public' | 'confidential'>('confidential');
  const [grants, setGrants] = useState<Grant[]>(['authorization_code', 'refresh_token']);
  const [uris, setUris] = useState('');
  const [scopes, setScopes] = useState<string[]>(['openid', 'email']);
  const { busy, error, run } = useAction();
  const toggle = <T,>(list: T[], value: T) => (list.includes(value) ? list.filter((v) => v !== value) : [...list, value]);
  const submit = async (e: Event) => {
    e.preventDefault();
    const created = await run(() => trpc.oauthClients.create.mutate({
      name, type, mode, grantTypes: grants, scopes, redirectUris: uris.split('\n').map((u) => u.trim()).filter(Boolean),
    }));
    if (created) onCreated(created.client, created.secret);
  };
  const permissionScopes = me.permission_scopes.flatMap((s) => [`${s}:read`, `${s}:write`]);
  return (
    <form class="card" onSubmit={submit} aria-labelledby="client-title">
      <h2 id="client-title">Register an OAuth client ({mode} mode)</h2>
      {error ? <Alert kind="error">{error}</Alert> : null}
      <label for="client-name">Name</label>
      <input id="client-name" required maxLength={100} value={name} onInput={(e) => setName(e.currentTarget.value)} />
      <fieldset>
        <legend>Client type</legend>
        <label class="inline"><input type="radio" name="client-type" checked={type === 'confidential'} onChange={() => setType('confidential')} /> Confidential (a server that keeps a secret)</label>
        <label class="inline"><input type="radio" name="client-type" checked={type === 'public'} onChange={() => { setType('public'); setGrants(grants.filter((g) => g !== 'client_credentials')); }} /> Public (a browser or mobile app: PKCE, no secret)</label>
      </fieldset>
      <fieldset>
        <legend>Grant types</legend>
        {GRANTS.map((g) => (
          <label class="inline" key={g.value}>
            <input type="checkbox" checked={grants.includes(g.value)} disabled={type === 'public' && g.value === 'client_credentials'}
              onChange={() => setGrants(toggle(grants, g.value))} /> {g.label}
          </label>
        ))}
      </fieldset>
      <label for="client-uris">Redirect URIs (one a line)</label>
      <textarea id="client-uris" rows={3} value={uris} onInput={(e) => setUris(e.currentTarget.value)} aria-describedby="client-uris-help" />
      <p id="client-uris-help" class="help">https://, http://localhost for development, or an app scheme such as com.example.app:/callback.</p>
      <fieldset class="permissions">
        <legend>Scopes</legend>
        {[...me.oidc_scopes, ...permissionScopes].map((s) => (
          <label class="inline" key={s}><input type="checkbox" checked={scopes.includes(s)} onChange={() => setScopes(toggle(scopes, s))} /> <code>{s}</code></label>
        ))}
      </fieldset>
      <div class="row">
        <button type="submit" class="primary" disabled={busy}>Register client</button>
        <button type="button" onClick={onCancel}>Cancel</button>
      </div>
    </form>
  );
}

export function OAuthClientsPage({ me, mode }: PageProps) {
  const clients = useLoad(() => trpc.oauthClients.list.query(), []);
  const [creating, setCreating] = useState(false);
  const [created, setCreated] = useState<{ client: Client; secret: string | null } | null>(null);
  const revoke = useAction();
  const canManage = me.can.manageOAuthClients;
  const onRevoke = async (c: Client) => {
    if (!confirm(`Revoke “${c.name}”? Its tokens stop working at once.`)) return;
    if (await revoke.run(() => trpc.oauthClients.revoke.mutate({ clientId: c.id }))) clients.reload();
  };
  const shown = clients.data?.filter((c) => c.mode === mode);
  return (
    <>
      <PageHeader title="OAuth clients">
        {canManage && !creating ? <button type="button" class="primary" onClick={() => { setCreated(null); setCreating(true); }}>Register client</button> : null}
      </PageHeader>
      {!canManage ? <p class="muted">Only admins and owners register and revoke OAuth clients.</p> : null}
      {created ? (
        <section class="card secret" aria-labelledby="client-secret-title">
          <h2 id="client-secret-title">“{created.client.name}” is registered</h2>
          <p>Client id: <code>{created.client.client_id}</code></p>
          {created.secret ? (
            <>
              <p>Client secret, <strong>shown only now</strong>:</p>
              <div class="secret-row"><code data-testid="client-secret">{created.secret}</code>
                <button type="button" onClick={() => void navigator.clipboard.writeText(created.secret!)}>Copy</button></div>
            </>
          ) : <p>A public client has no secret: it proves itself with PKCE.</p>}
          <div class="row"><button type="button" class="primary" onClick={() => setCreated(null)}>Done</button></div>
        </section>
      ) : null}
      {creating ? <CreateClientForm me={me} mode={mode} onCancel={() => setCreating(false)} onCreated={(client, secret) => { setCreating(false); setCreated({ client, secret }); clients.reload(); }} /> : null}
      {revoke.error ? <Alert kind="error">{revoke.error}</Alert> : null}
      <Loading loading={clients.loading && !clients.data} error={clients.error} />
      {shown?.length === 0 ? <p>No {mode} OAuth clients.</p> : null}
      {shown?.length ? (
        <Table caption={`OAuth clients (${mode})`} head={['Name', 'Client id', 'Type', 'Grants', 'Scopes', 'Status', 'Created', ...(canManage ? ['Actions'] : [])]}>
          {shown.map((c) => (
            <tr key={c.id}>
              <td>{c.name}{c.first_party ? <span class="badge">first party</span> : null}</td>
              <td><code>{c.client_id}</code></td>
              <td>{c.type}</td>
              <td>{c.grant_types.join(', ')}</td>
              <td>{c.scopes.join(' ')}</td>
              <td><span class={`badge badge-${c.status}`}>{c.status === 'active' ? 'Active' : 'Revoked'}</span></td>
              <td>{formatDate(c.created_at)}</td>
              {canManage ? <td>{c.status === 'active' ? <button type="button" class="danger" onClick={() => void onRevoke(c)}>Revoke<span class="visually-hidden"> {c.name}</span></button> : null}</td> : null}
            </tr>
          ))}
        </Table>
      ) : null}
    </>
  );
}
