import { useState } from 'preact/hooks';
import { signIn } from '../api.ts';
import { Alert } from '../ui.tsx';

export function SignInPage({ onSignedIn }: { onSignedIn: () => Promise<void> }) {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await signIn(email, password);
      await onSignedIn();
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setBusy(false);
    }
  };

  return (
    <main class="center">
      <form class="card signin" onSubmit={submit} aria-labelledby="signin-title">
        <h1 id="signin-title">Sign in to the dashboard</h1>
        {error ? <Alert kind="error">{error}</Alert> : null}
        <label for="email">Email</label>
        <input id="email" name="email" type="email" autoComplete="username" required value={email}
          onInput={(e) => setEmail(e.currentTarget.value)} />
        <label for="password">Password</label>
        <input id="password" name="password" type="password" autoComplete="current-password" required value={password}
          onInput={(e) => setPassword(e.currentTarget.value)} />
        <button type="submit" class="primary" disabled={busy}>{busy ? 'Signing in…' : 'Sign in'}</button>
        <p class="muted">No account yet? The first owner is created with <code>npm run cli -- users create</code>.</p>
      </form>
    </main>
  );
}
