// @ts-check
import js from '@eslint/js';
import { builtinModules } from 'node:module';
import tseslint from 'typescript-eslint';

const nodeBuiltins = [...builtinModules, ...builtinModules.map((m) => `node:${m}`)];

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', '.data/**', '.tools/**', 'coverage/**', 'eslint.config.js', '.dependency-cruiser.cjs'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: false }],
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      // Areas add members to shared interfaces by declaration merging (`interface EventTypes extends Record<…> {}`).
      '@typescript-eslint/no-empty-object-type': ['error', { allowInterfaces: 'with-single-extends' }],
    },
  },
  {
    // Workflow code is replayed deterministically inside Temporal's sandbox: no I/O, no Node
    // built-ins, no ORM, and activities only as types (through proxyActivities).
    files: ['workflows/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': ['error', {
        paths: nodeBuiltins.map((name) => ({ name, message: 'Workflow code must not use Node built-ins; use activities.' })),
        patterns: [
          { group: ['@mikro-orm/*', 'pg', 'express', '@temporalio/client', '@temporalio/worker'], message: 'Workflow code must not do I/O; call an activity.' },
          // domain/money.ts is the one exception: pure arithmetic with no imports (enforced below).
          { regex: '^(\\.\\./)+(activities|domain(?!/money\\.ts$)|api|db|platform|worker)/', allowTypeImports: true, message: 'Import activities and services only as types in workflow code.' },
        ],
      }],
      'no-restricted-globals': ['error',
        { name: 'setTimeout', message: 'Use sleep() or condition() from @temporalio/workflow.' },
        { name: 'setInterval', message: 'Use sleep() in a loop from @temporalio/workflow.' },
        { name: 'process', message: 'Workflow code has no process.' }],
      'no-restricted-properties': ['error',
        { object: 'Math', property: 'random', message: 'Deterministic code only: pass randomness in, or use uuid4() from @temporalio/workflow.' }],
    },
  },
  {
    // Workflows import the money helpers, so domain/money.ts stays pure: it imports nothing.
    files: ['domain/money.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': ['error', {
        patterns: [{ regex: '.', message: 'domain/money.ts is imported by workflow code: keep it free of imports.' }],
      }],
    },
  },
);
