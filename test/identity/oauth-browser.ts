/**
 * A browser, as far as the OAuth login needs one: fetch with a cookie jar (path-scoped, deletions
 * honoured) that follows redirects by hand, so a test sees every hop and every page.
 */
interface Cookie { value: string; path: string }

export class Browser {
  private readonly jar = new Map<string, Cookie>();

  private store(res: Response): void {
    for (const line of res.headers.getSetCookie()) {
      const [pair, ...attrs] = line.split(';');
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq).trim();
      const value = pair!.slice(eq + 1).trim();
      const attr = (n: string) => attrs.map((a) => a.trim()).find((a) => a.toLowerCase().startsWith(`${n}=`))?.split('=')[1];
      const path = attr('path') ?? '/';
      const expires = attr('expires');
      const gone = attr('max-age') === '0' || (expires !== undefined && new Date(expires).getTime() < Date.now()) || value === '';
      const key = `${name};${path}`;
      if (gone) this.jar.delete(key);
      else this.jar.set(key, { value, path });
    }
  }

  cookieHeader(url: URL): string {
    return [...this.jar].filter(([, c]) => url.pathname.startsWith(c.path))
      .sort(([, a], [, b]) => b.path.length - a.path.length)
      .map(([key, c]) => `${key.split(';')[0]}=${c.value}`).join('; ');
  }

  /** One request, no redirect followed. */
  async request(url: string | URL, init: { method?: string; form?: Record<string, string>; headers?: Record<string, string> } = {}): Promise<{ res: Response; text: string }> {
    const target = new URL(url);
    const headers: Record<string, string> = { ...init.headers, cookie: this.cookieHeader(target), accept: 'text/html' };
    let body: string | undefined;
    if (init.form) {
      body = new URLSearchParams(init.form).toString();
      headers['content-type'] = 'application/x-www-form-urlencoded';
    }
    const res = await fetch(target, { method: init.method ?? (body ? 'POST' : 'GET'), headers, body, redirect: 'manual' });
    this.store(res);
    return { res, text: await res.text() };
  }

  /**
   * Follows redirects from `url` until one leaves for `stopAt` (the client's redirect URI: returned,
   * not fetched) or a page answers (returned with its URL).
   */
  async follow(url: string | URL, stopAt: string, init: { form?: Record<string, string> } = {}): Promise<{ url: URL; res: Response; text: string }> {
    let current = new URL(url);
    let step = await this.request(current, init);
    for (let hops = 0; hops < 10; hops++) {
      const location = step.res.headers.get('location');
      if (step.res.status < 300 || step.res.status >= 400 || !location) return { url: current, ...step };
      current = new URL(location, current);
      if (current.href.startsWith(stopAt)) return { url: current, ...step };
      step = await this.request(current);
    }
    throw new Error(`too many redirects, last ${current.href}`);
  }
}

/** The value of a hidden input in a page. */
export function hiddenField(html: string, name: string): string {
  const match = new RegExp(`name="${name}" value="([^"]*)"`).exec(html);
  if (!match) throw new Error(`no ${name} in the page: ${html.slice(0, 500)}`);
  return match[1]!;
}

/** The action of the form whose action ends with `suffix`. */
export function formAction(html: string, suffix: string): string {
  const match = new RegExp(`action="([^"]*${suffix})"`).exec(html);
  if (!match) throw new Error(`no form posting to …${suffix} in the page: ${html.slice(0, 500)}`);
  return match[1]!;
}
