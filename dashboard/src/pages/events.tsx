import { useState } from 'preact/hooks';
import { trpc, type Outputs } from '../api.ts';
import type { PageProps } from '../app.tsx';
import { Loading, PageHeader, Table, formatDate, useLoad } from '../ui.tsx';

type EventRow = Outputs['events']['list'][number];

function EventRowView({ e }: { e: EventRow }) {
  const [open, setOpen] = useState(false);
  return (
    <>
      <tr>
        <td>{formatDate(e.created_at)}</td>
        <td><code>{e.type}</code></td>
        <td><code>{e.id}</code></td>
        <td><button type="button" aria-expanded={open} aria-controls={`event-${e.id}`} onClick={() => setOpen(!open)}>{open ? 'Hide' : 'Show'} data<span class="visually-hidden"> of {e.id}</span></button></td>
      </tr>
      {open ? <tr id={`event-${e.id}`}><td colSpan={4}><pre class="problem" tabIndex={0}>{JSON.stringify(e, null, 2)}</pre></td></tr> : null}
    </>
  );
}

export function EventsPage({ mode }: PageProps) {
  const [draft, setDraft] = useState('');
  const [type, setType] = useState('');
  const events = useLoad(() => trpc.events.list.query({ mode, ...(type ? { type } : {}) }), [mode, type]);
  return (
    <>
      <PageHeader title="Events"><button type="button" onClick={events.reload}>Refresh</button></PageHeader>
      <form class="filters" onSubmit={(e) => { e.preventDefault(); setType(draft.trim()); }} aria-label="Filter events">
        <div>
          <label for="f-type">Type</label>
          <input id="f-type" value={draft} placeholder="payment.succeeded or payment.*" onInput={(e) => setDraft(e.currentTarget.value)} />
        </div>
        <button type="submit" class="primary">Apply filter</button>
      </form>
      <Loading loading={events.loading && !events.data} error={events.error} />
      {events.data?.length === 0 ? <p>No {mode} events.</p> : null}
      {events.data?.length ? (
        <Table caption="Events, newest first" head={['Created', 'Type', 'Id', 'Data']}>
          {events.data.map((e) => <EventRowView e={e} key={e.id} />)}
        </Table>
      ) : null}
    </>
  );
}
