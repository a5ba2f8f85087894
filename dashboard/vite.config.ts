import preact from '@preact/preset-vite';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

// The dashboard web app: built into dist/dashboard (ignored), served by the API at /dashboard.
const root = fileURLToPath(new URL('.', import.meta.url));

export default defineConfig({
  root,
  base: '/dashboard/',
  // No devtools hooks in the served bundle, whatever NODE_ENV the build runs under (tests set `test`).
  plugins: [preact({ devToolsEnabled: false })],
  build: {
    outDir: fileURLToPath(new URL('../dist/dashboard', import.meta.url)),
    emptyOutDir: true,
    // Every asset a file of its own: the page's Content-Security-Policy allows no inline code.
    assetsInlineLimit: 0,
    sourcemap: true,
  },
});
