import type { ComponentType } from 'preact';
import { useCallback, useEffect, useState } from 'preact/hooks';
import { isSignedOut, resumeSession, signOut, trpc, type Me, type Mode } from './api.ts';
import { EventsPage } from './pages/events.tsx';
import { KeysPage } from './pages/keys.tsx';
import { OAuthClientsPage } from './pages/oauth.tsx';
import { RequestsPage } from './pages/requests.tsx';
import { SignInPage } from './pages/signin.tsx';
import { TeamPage } from './pages/team.tsx';
import { UsagePage } from './pages/usage.tsx';
import { WebhooksPage } from './pages/webhooks.tsx';
import { Alert } from './ui.tsx';

export interface PageProps {
  me: Me;
  mode: Mode;
}

const PAGES: { path: string; title: string; component: ComponentType<PageProps> }[] = [
  { path: 'keys', title: 'API keys', component: KeysPage },
  { path: 'usage', title: 'Usage', component: UsagePage },
  { path: 'requests', title: 'Request log', component: RequestsPage },
  { path: 'webhooks', title: 'Webhooks', component: WebhooksPage },
  { path: 'events', title: 'Events', component: EventsPage },
  { path: 'oauth-clients', title: 'OAuth clients', component: OAuthClientsPage },
  { path: 'team', title: 'Team', component: TeamPage },
];

const BASE = '/dashboard/';

function currentPage(): string {
  const path = location.pathname.startsWith(BASE) ? location.pathname.slice(BASE.length).replace(/\/$/, '') : '';
  return PAGES.some((p) => p.path === path) ? path : 'keys';
}

function storedMode(): Mode {
  return localStorage.getItem('bp-mode') === 'live' ? 'live' : 'test';
}

export function App() {
  const [phase, setPhase] = useState<'loading' | 'signin' | 'ready'>('loading');
  const [me, setMe] = useState<Me | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [page, setPage] = useState(currentPage);
  const [mode, setMode] = useState<Mode>(storedMode);

  const loadMe = useCallback(async () => {
    try {
      setMe(await trpc.me.query());
      setPhase('ready');
    } catch (err) {
      if (isSignedOut(err)) setPhase('signin');
      else setError((err as Error).message);
    }
  }, []);

  useEffect(() => {
    void resumeSession().then((ok) => (ok ? loadMe() : setPhase('signin')), () => setPhase('signin'));
    const onPop = () => setPage(currentPage());
    addEventListener('popstate', onPop);
    return () => removeEventListener('popstate', onPop);
  }, [loadMe]);

  // A new page moves focus to its heading, so screen readers announce it.
  useEffect(() => {
    document.getElementById('page-title')?.focus();
    const title = PAGES.find((p) => p.path === page)?.title;
    document.title = `${title ?? 'Dashboard'} · Business Platform`;
  }, [page, phase]);

  const navigate = (path: string) => (e: MouseEvent) => {
    if (e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    e.preventDefault();
    history.pushState(null, '', BASE + path);
    setPage(path);
  };

  const toggleMode = () => {
    const next = mode === 'test' ? 'live' : 'test';
    localStorage.setItem('bp-mode', next);
    setMode(next);
  };

  if (error) return <main class="center"><Alert kind="error">{error}</Alert></main>;
  if (phase === 'loading') return <main class="center"><p aria-live="polite">Loading…</p></main>;
  if (phase === 'signin' || !me) return <SignInPage onSignedIn={loadMe} />;

  const Current = PAGES.find((p) => p.path === page)!.component;
  return (
    <div class={`shell mode-${mode}`}>
      <a class="skip-link" href="#main">Skip to content</a>
      <header class="topbar">
        <span class="brand">Business Platform</span>
        <button type="button" class="mode-toggle" role="switch" aria-checked={mode === 'live'} onClick={toggleMode}>
          <span class="visually-hidden">Live mode</span>
          <span aria-hidden="true">{mode === 'live' ? 'Live' : 'Test'} mode</span>
        </button>
        <span class="who">{me.user.email} <span class="role">({me.user.role})</span></span>
        <button type="button" class="link-button" onClick={() => void signOut().then(() => { setMe(null); setPhase('signin'); })}>Sign out</button>
      </header>
      {mode === 'test' ? <div class="test-banner" role="note">Test mode: you are viewing test data. Test keys never touch real money.</div> : null}
      <nav aria-label="Dashboard">
        <ul>
          {PAGES.map((p) => (
            <li key={p.path}>
              <a href={BASE + p.path} aria-current={p.path === page ? 'page' : undefined} onClick={navigate(p.path)}>{p.title}</a>
            </li>
          ))}
        </ul>
      </nav>
      <main id="main">
        <Current me={me} mode={mode} />
      </main>
    </div>
  );
}
