import { useState } from 'preact/hooks';
import { trpc, type Outputs } from '../api.ts';
import type { PageProps } from '../app.tsx';
import { Alert, Loading, PageHeader, Table, formatDate, useAction, useLoad } from '../ui.tsx';

type Member = Outputs['members']['list'][number];
type Role = Member['role'];
const ROLES: Role[] = ['owner', 'admin', 'developer', 'viewer'];
const ROLE_HELP: Record<Role, string> = {
  owner: 'everything, including owners',
  admin: 'everything but owners: team, OAuth clients, keys',
  developer: 'keys and webhooks; reads the rest',
  viewer: 'reads only',
};

function AddMember({ isOwner, onAdded }: { isOwner: boolean; onAdded: (email: string, password?: string) => void }) {
  const [email, setEmail] = useState('');
  const [role, setRole] = useState<Role>('developer');
  const { busy, error, run } = useAction();
  const submit = async (e: Event) => {
    e.preventDefault();
    const added = await run(() => trpc.members.add.mutate({ email, role }));
    if (added) {
      setEmail('');
      onAdded(added.member.email, added.temporary_password);
    }
  };
  return (
    <form class="card" onSubmit={submit} aria-labelledby="add-member-title">
      <h2 id="add-member-title">Add a member</h2>
      {error ? <Alert kind="error">{error}</Alert> : null}
      <label for="member-email">Email</label>
      <input id="member-email" type="email" required value={email} onInput={(e) => setEmail(e.currentTarget.value)} />
      <label for="member-role">Role</label>
      <select id="member-role" value={role} onChange={(e) => setRole(e.currentTarget.value as Role)} aria-describedby="member-role-help">
        {ROLES.filter((r) => isOwner || r !== 'owner').map((r) => <option value={r} key={r}>{r}</option>)}
      </select>
      <p id="member-role-help" class="help">{role}: {ROLE_HELP[role]}.</p>
      <div class="row"><button type="submit" class="primary" disabled={busy}>Add member</button></div>
    </form>
  );
}

function MemberRow({ m, canManage, isOwner, onChanged }: { m: Member; canManage: boolean; isOwner: boolean; onChanged: () => void }) {
  const [role, setRole] = useState<Role>(m.role);
  const action = useAction();
  const locked = !isOwner && m.role === 'owner';
  const change = async () => {
    if (await action.run(() => trpc.members.changeRole.mutate({ userId: m.id, role }))) onChanged();
  };
  const remove = async () => {
    if (!confirm(`Remove ${m.email} from the account?`)) return;
    if (await action.run(() => trpc.members.remove.mutate({ userId: m.id }))) onChanged();
  };
  return (
    <tr>
      <td>{m.email}</td>
      <td>
        {canManage && !locked ? (
          <span class="actions">
            <label class="visually-hidden" for={`role-${m.id}`}>Role of {m.email}</label>
            <select id={`role-${m.id}`} value={role} onChange={(e) => setRole(e.currentTarget.value as Role)}>
              {ROLES.filter((r) => isOwner || r !== 'owner').map((r) => <option value={r} key={r}>{r}</option>)}
            </select>
            <button type="button" disabled={role === m.role || action.busy} onClick={() => void change()}>Save<span class="visually-hidden"> role of {m.email}</span></button>
          </span>
        ) : m.role}
        {action.error ? <Alert kind="error">{action.error}</Alert> : null}
      </td>
      <td>{formatDate(m.created_at)}</td>
      {canManage ? <td>{locked ? null : <button type="button" class="danger" onClick={() => void remove()}>Remove<span class="visually-hidden"> {m.email}</span></button>}</td> : null}
    </tr>
  );
}

export function TeamPage({ me }: PageProps) {
  const members = useLoad(() => trpc.members.list.query(), []);
  const [notice, setNotice] = useState<string | null>(null);
  const [password, setPassword] = useState<{ email: string; password: string } | null>(null);
  const canManage = me.can.manageMembers;
  const isOwner = me.user.role === 'owner';
  return (
    <>
      <PageHeader title="Team" />
      {!canManage ? <p class="muted">Only admins and owners manage the team.</p> : null}
      {password ? (
        <section class="card secret" aria-labelledby="temp-title">
          <h2 id="temp-title">Temporary password for {password.email}</h2>
          <p>Give it to them over a safe channel; <strong>it will not be shown again</strong>.</p>
          <code data-testid="temporary-password">{password.password}</code>
          <div class="row"><button type="button" onClick={() => setPassword(null)}>Done</button></div>
        </section>
      ) : null}
      {notice ? <Alert kind="success">{notice}</Alert> : null}
      {canManage ? <AddMember isOwner={isOwner} onAdded={(email, pw) => { setNotice(`${email} was added.`); if (pw) setPassword({ email, password: pw }); members.reload(); }} /> : null}
      <Loading loading={members.loading && !members.data} error={members.error} />
      {members.data?.length ? (
        <Table caption="Members of the account" head={['Email', 'Role', 'Member since', ...(canManage ? ['Actions'] : [])]}>
          {members.data.map((m) => <MemberRow key={`${m.id}-${m.role}`} m={m} canManage={canManage && m.id !== me.user.id} isOwner={isOwner} onChanged={members.reload} />)}
        </Table>
      ) : null}
    </>
  );
}
