/** `npm run build` step: bundles the workflow code once, for production workers to load. */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { buildWorkflowBundle } from '../worker/worker.ts';

const target = fileURLToPath(new URL('../dist/workflow-bundle.js', import.meta.url));
const { code } = await buildWorkflowBundle();
writeFileSync(target, code);
console.log(`Workflow bundle written to dist/workflow-bundle.js (${(code.length / 1024).toFixed(0)} KiB)`);
