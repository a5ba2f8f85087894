import { useState } from 'preact/hooks';
import { trpc, type Outputs } from '../api.ts';
import type { PageProps } from '../app.tsx';
import { Loading, PageHeader, Table, formatDate, useLoad } from '../ui.tsx';

type Row = Outputs['requests']['list'][number];
interface Filters { status: string; path: string; keyId: string; before?: string }

function RequestRow({ r, keyName }: { r: Row; keyName: string }) {
  const [open, setOpen] = useState(false);
  return (
    <>
      <tr data-request-id={r.request_id}>
        <td>{formatDate(r.created_at)}</td>
        <td><code>{r.method} {r.path}</code></td>
        <td><span class={`badge ${r.status >= 400 ? 'badge-revoked' : 'badge-active'}`}>{r.status}</span></td>
        <td>{r.duration_ms} ms</td>
        <td>{keyName}</td>
        <td>
          {r.problem ? (
            <button type="button" aria-expanded={open} aria-controls={`problem-${r.id}`} onClick={() => setOpen(!open)}>
              {open ? 'Hide' : 'Show'} problem<span class="visually-hidden"> of {r.request_id}</span>
            </button>
          ) : <span class="muted">—</span>}
        </td>
      </tr>
      {open && r.problem ? (
        <tr id={`problem-${r.id}`}><td colSpan={6}><pre class="problem" tabIndex={0}>{JSON.stringify(r.problem, null, 2)}</pre></td></tr>
      ) : null}
    </>
  );
}

export function RequestsPage({ mode }: PageProps) {
  const [draft, setDraft] = useState<Filters>({ status: '', path: '', keyId: '' });
  const [filters, setFilters] = useState<Filters>(draft);
  const keys = useLoad(() => trpc.keys.list.query({ mode }), [mode]);
  const log = useLoad(() => trpc.requests.list.query({
    mode, ...(filters.status ? { status: filters.status } : {}), ...(filters.path ? { path: filters.path } : {}),
    ...(filters.keyId ? { keyId: filters.keyId } : {}), ...(filters.before ? { before: filters.before } : {}),
  }), [mode, filters]);
  const keyName = (id: string | null) => (id ? keys.data?.find((k) => k.id === id)?.name ?? id : 'no key');

  return (
    <>
      <PageHeader title="Request log"><button type="button" onClick={log.reload}>Refresh</button></PageHeader>
      <form class="filters" onSubmit={(e) => { e.preventDefault(); setFilters({ ...draft }); }} aria-label="Filter requests">
        <div>
          <label for="f-status">Status</label>
          <select id="f-status" value={draft.status} onChange={(e) => setDraft({ ...draft, status: e.currentTarget.value })}>
            <option value="">Any</option>
            <option value="failed">Failed (400 and up)</option>
            <option value="2xx">2xx</option>
            <option value="4xx">4xx</option>
            <option value="5xx">5xx</option>
            {['400', '401', '403', '404', '409', '422', '429'].map((s) => <option value={s} key={s}>{s}</option>)}
          </select>
        </div>
        <div>
          <label for="f-path">Path starts with</label>
          <input id="f-path" value={draft.path} placeholder="/v3/customers" onInput={(e) => setDraft({ ...draft, path: e.currentTarget.value })} />
        </div>
        <div>
          <label for="f-key">Key</label>
          <select id="f-key" value={draft.keyId} onChange={(e) => setDraft({ ...draft, keyId: e.currentTarget.value })}>
            <option value="">Any key</option>
            {keys.data?.map((k) => <option value={k.id} key={k.id}>{k.name} ({k.key})</option>)}
          </select>
        </div>
        <button type="submit" class="primary">Apply filters</button>
      </form>
      <Loading loading={log.loading && !log.data} error={log.error} />
      {log.data?.length === 0 ? <p>No {mode} requests match.</p> : null}
      {log.data?.length ? (
        <Table caption="Requests, newest first" head={['Time', 'Request', 'Status', 'Duration', 'Key', 'Problem']}>
          {log.data.map((r) => <RequestRow r={r} key={r.id} keyName={keyName(r.api_key_id)} />)}
        </Table>
      ) : null}
      <div class="row">
        {filters.before ? <button type="button" onClick={() => setFilters({ ...filters, before: undefined })}>Newest</button> : null}
        {log.data && log.data.length >= 50 ? <button type="button" onClick={() => setFilters({ ...filters, before: log.data!.at(-1)!.id })}>Older</button> : null}
      </div>
    </>
  );
}
