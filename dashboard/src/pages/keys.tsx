import { useState } from 'preact/hooks';
import { trpc, type Key, type Mode } from '../api.ts';
import type { PageProps } from '../app.tsx';
import { Alert, Loading, PageHeader, Table, formatDate, useAction, useLoad } from '../ui.tsx';

function keyStatus(k: Key): string {
  if (k.status === 'revoked') return 'Revoked';
  if (k.expires_at && Date.parse(k.expires_at) <= Date.now()) return 'Expired';
  return 'Active';
}

/** The full key text, shown once: after this panel is closed nobody can see it again. */
function SecretOnce({ secret, name, onDone }: { secret: string; name: string; onDone: () => void }) {
  const [copied, setCopied] = useState(false);
  const copy = async () => {
    await navigator.clipboard.writeText(secret);
    setCopied(true);
  };
  return (
    <section class="card secret" aria-labelledby="secret-title">
      <h2 id="secret-title">Your new key “{name}”</h2>
      <p>Copy it now and keep it somewhere safe: <strong>it will not be shown again</strong>.</p>
      <div class="secret-row">
        <code id="new-secret" data-testid="new-secret">{secret}</code>
        <button type="button" onClick={() => void copy()} aria-describedby="new-secret">Copy</button>
      </div>
      <p aria-live="polite" class="muted">{copied ? 'Copied to the clipboard.' : ''}</p>
      <button type="button" class="primary" onClick={onDone}>I have saved it</button>
    </section>
  );
}

function CreateKeyForm({ mode, scopes, onCreated, onCancel }: {
  mode: Mode; scopes: readonly string[]; onCreated: (name: string, secret: string) => void; onCancel: () => void;
}) {
  const [name, setName] = useState('');
  const [keyMode, setKeyMode] = useState<Mode>(mode);
  const [restricted, setRestricted] = useState(false);
  const [permissions, setPermissions] = useState<string[]>([]);
  const [expires, setExpires] = useState('');
  const { busy, error, run } = useAction();

  const toggle = (p: string) => setPermissions((ps) => (ps.includes(p) ? ps.filter((x) => x !== p) : [...ps, p]));
  const submit = async (e: Event) => {
    e.preventDefault();
    const created = await run(() => trpc.keys.create.mutate({ name, mode: keyMode, restricted, permissions, ...(expires ? { expires } : {}) }));
    if (created) onCreated(created.key.name, created.secret);
  };

  return (
    <form class="card" onSubmit={submit} aria-labelledby="create-title">
      <h2 id="create-title">Create an API key</h2>
      {error ? <Alert kind="error">{error}</Alert> : null}
      <label for="key-name">Name</label>
      <input id="key-name" required maxLength={100} value={name} placeholder="e.g. Checkout server" aria-describedby="key-name-help"
        onInput={(e) => setName(e.currentTarget.value)} />
      <p id="key-name-help" class="help">Say where the key is used, so you know what breaks when you revoke it.</p>
      <fieldset>
        <legend>Type</legend>
        <label class="inline"><input type="radio" name="key-mode" value="test" checked={keyMode === 'test'} onChange={() => setKeyMode('test')} /> Test</label>
        <label class="inline"><input type="radio" name="key-mode" value="live" checked={keyMode === 'live'} onChange={() => setKeyMode('live')} /> Live</label>
      </fieldset>
      <label class="inline"><input type="checkbox" checked={restricted} onChange={() => setRestricted(!restricted)} /> Restrict to chosen permissions (recommended)</label>
      {restricted ? (
        <fieldset class="permissions">
          <legend>Permissions</legend>
          {scopes.map((scope) => (
            <div class="permission" key={scope}>
              <span>{scope}</span>
              {(['read', 'write'] as const).map((level) => (
                <label class="inline" key={level}>
                  <input type="checkbox" checked={permissions.includes(`${scope}:${level}`)} onChange={() => toggle(`${scope}:${level}`)} />
                  {' '}{level}<span class="visually-hidden"> {scope}</span>
                </label>
              ))}
            </div>
          ))}
        </fieldset>
      ) : <p class="help">An unrestricted key holds every permission.</p>}
      <label for="key-expires">Expires (optional)</label>
      <input id="key-expires" type="date" value={expires} onInput={(e) => setExpires(e.currentTarget.value)} aria-describedby="key-expires-help" />
      <p id="key-expires-help" class="help">The key stops working at the start of that day (UTC).</p>
      <div class="row">
        <button type="submit" class="primary" disabled={busy}>{busy ? 'Creating…' : 'Create key'}</button>
        <button type="button" onClick={onCancel}>Cancel</button>
      </div>
    </form>
  );
}

const OVERLAPS = [0, 1, 24, 72, 168];

function RollForm({ k, onRolled, onCancel }: { k: Key; onRolled: (name: string, secret: string) => void; onCancel: () => void }) {
  const [hours, setHours] = useState(24);
  const { busy, error, run } = useAction();
  const submit = async (e: Event) => {
    e.preventDefault();
    const rolled = await run(() => trpc.keys.roll.mutate({ keyId: k.id, overlapHours: hours }));
    if (rolled) onRolled(rolled.key.name, rolled.secret);
  };
  return (
    <form class="card" onSubmit={submit} aria-labelledby="roll-title">
      <h2 id="roll-title">Roll “{k.name}”</h2>
      <p>A new key replaces <code>{k.key}</code>; the old one keeps working for the overlap, then expires.</p>
      {error ? <Alert kind="error">{error}</Alert> : null}
      <label for="roll-overlap">Overlap</label>
      <select id="roll-overlap" value={hours} onChange={(e) => setHours(Number(e.currentTarget.value))}>
        {OVERLAPS.map((h) => <option value={h} key={h}>{h === 0 ? 'None: expire the old key now' : h < 24 ? `${h} hour` : `${h / 24} day${h > 24 ? 's' : ''}`}</option>)}
      </select>
      <div class="row">
        <button type="submit" class="primary" disabled={busy}>Roll key</button>
        <button type="button" onClick={onCancel}>Cancel</button>
      </div>
    </form>
  );
}

export function KeysPage({ me, mode }: PageProps) {
  const keys = useLoad(() => trpc.keys.list.query({ mode }), [mode]);
  const [creating, setCreating] = useState(false);
  const [rolling, setRolling] = useState<Key | null>(null);
  const [secret, setSecret] = useState<{ name: string; secret: string } | null>(null);
  const revoke = useAction();
  const canManage = me.can.manageKeys;

  const shown = (name: string, text: string) => {
    setCreating(false);
    setRolling(null);
    setSecret({ name, secret: text });
    keys.reload();
  };
  const onRevoke = async (k: Key) => {
    if (!confirm(`Revoke “${k.name}” (${k.key})? Requests with it fail at once.`)) return;
    await revoke.run(() => trpc.keys.revoke.mutate({ keyId: k.id }));
    keys.reload();
  };

  return (
    <>
      <PageHeader title="API keys">
        {canManage && !creating && !secret ? <button type="button" class="primary" onClick={() => setCreating(true)}>Create key</button> : null}
      </PageHeader>
      {!canManage ? <p class="muted">Your role ({me.user.role}) can see keys but not create, roll or revoke them.</p> : null}
      {secret ? <SecretOnce name={secret.name} secret={secret.secret} onDone={() => setSecret(null)} /> : null}
      {creating ? <CreateKeyForm mode={mode} scopes={me.permission_scopes} onCreated={shown} onCancel={() => setCreating(false)} /> : null}
      {rolling ? <RollForm k={rolling} onRolled={shown} onCancel={() => setRolling(null)} /> : null}
      {revoke.error ? <Alert kind="error">{revoke.error}</Alert> : null}
      <Loading loading={keys.loading && !keys.data} error={keys.error} />
      {keys.data?.length === 0 ? <p>No {mode} keys yet.</p> : null}
      {keys.data?.length ? (
        <Table caption={`${mode === 'live' ? 'Live' : 'Test'} API keys`} head={['Name', 'Key', 'Permissions', 'Status', 'Created', 'Last used', 'Expires', ...(canManage ? ['Actions'] : [])]}>
          {keys.data.map((k) => (
            <tr key={k.id} data-key-id={k.id}>
              <td>{k.name}</td>
              <td><code>{k.key}</code></td>
              <td>{k.permissions.join(', ')}</td>
              <td><span class={`badge badge-${keyStatus(k).toLowerCase()}`}>{keyStatus(k)}</span></td>
              <td>{formatDate(k.created_at)}</td>
              <td data-testid="last-used">{k.last_used_at ? formatDate(k.last_used_at) : 'Never'}</td>
              <td>{formatDate(k.expires_at)}</td>
              {canManage ? (
                <td class="actions">
                  {keyStatus(k) === 'Active' ? (
                    <>
                      <button type="button" onClick={() => { setCreating(false); setRolling(k); }}>Roll<span class="visually-hidden"> {k.name}</span></button>
                      <button type="button" class="danger" onClick={() => void onRevoke(k)}>Revoke<span class="visually-hidden"> {k.name}</span></button>
                    </>
                  ) : null}
                </td>
              ) : null}
            </tr>
          ))}
        </Table>
      ) : null}
    </>
  );
}
