import { useState } from 'preact/hooks';
import { trpc } from '../api.ts';
import type { PageProps } from '../app.tsx';
import { Alert, Loading, PageHeader, Table, formatDate, useAction, useLoad } from '../ui.tsx';

function Deliveries({ mode, endpointId, canResend }: { mode: PageProps['mode']; endpointId: string; canResend: boolean }) {
  const deliveries = useLoad(() => trpc.webhooks.deliveries.query({ mode, endpointId }), [mode, endpointId]);
  const resend = useAction();
  const [done, setDone] = useState<string | null>(null);
  const onResend = async (deliveryId: string) => {
    setDone(null);
    if (await resend.run(() => trpc.webhooks.resend.mutate({ mode, endpointId, deliveryId }))) {
      setDone(`Delivery ${deliveryId} is being sent again.`);
      deliveries.reload();
    }
  };
  return (
    <section aria-labelledby="deliveries-title">
      <h2 id="deliveries-title">Deliveries</h2>
      {resend.error ? <Alert kind="error">{resend.error}</Alert> : null}
      {done ? <Alert kind="success">{done}</Alert> : null}
      <Loading loading={deliveries.loading && !deliveries.data} error={deliveries.error} />
      {deliveries.data?.length === 0 ? <p>No deliveries yet.</p> : null}
      {deliveries.data?.length ? (
        <Table caption="Deliveries, newest first" head={['Created', 'Event', 'Status', 'HTTP', 'Attempts', 'Last error', ...(canResend ? ['Actions'] : [])]}>
          {deliveries.data.map((d) => (
            <tr key={d.id}>
              <td>{formatDate(d.created_at)}</td>
              <td><code>{d.event_type}</code>{d.test ? <span class="badge">test</span> : null}</td>
              <td>{d.status}</td>
              <td>{d.http_status ?? '—'}</td>
              <td>{d.attempts}</td>
              <td>{d.last_error ?? '—'}</td>
              {canResend ? <td><button type="button" disabled={resend.busy} onClick={() => void onResend(d.id)}>Resend<span class="visually-hidden"> {d.id}</span></button></td> : null}
            </tr>
          ))}
        </Table>
      ) : null}
    </section>
  );
}

export function WebhooksPage({ me, mode }: PageProps) {
  const endpoints = useLoad(() => trpc.webhooks.endpoints.query({ mode }), [mode]);
  const [selected, setSelected] = useState<string | null>(null);
  return (
    <>
      <PageHeader title="Webhooks" />
      <p class="muted">Endpoints are created with the API (<code>POST /v3/webhooks</code>); here you follow their deliveries and send one again.</p>
      <Loading loading={endpoints.loading && !endpoints.data} error={endpoints.error} />
      {endpoints.data?.length === 0 ? <p>No {mode} webhook endpoints.</p> : null}
      {endpoints.data?.length ? (
        <Table caption="Webhook endpoints" head={['URL', 'Events', 'Status', 'Created', 'Deliveries']}>
          {endpoints.data.map((e) => (
            <tr key={e.id} aria-selected={selected === e.id}>
              <td><code>{e.url}</code></td>
              <td>{e.events.join(', ')}</td>
              <td>{e.status}</td>
              <td>{formatDate(e.created_at)}</td>
              <td><button type="button" aria-pressed={selected === e.id} onClick={() => setSelected(e.id)}>Show<span class="visually-hidden"> deliveries of {e.url}</span></button></td>
            </tr>
          ))}
        </Table>
      ) : null}
      {selected ? <Deliveries mode={mode} endpointId={selected} canResend={me.can.resendWebhooks} /> : null}
    </>
  );
}
