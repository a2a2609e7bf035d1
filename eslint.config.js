import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: ['dist/**', 'node_modules/**', '.api-report-*/**', '.readme-examples-*/**', '.postroom/**', 'coverage/**', 'bench/results/**'],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: {
        process: 'readonly',
        console: 'readonly',
        Buffer: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        setInterval: 'readonly',
        clearInterval: 'readonly',
        setImmediate: 'readonly',
        URL: 'readonly',
      },
    },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      'no-restricted-properties': [
        'error',
        { object: 'process', property: 'env', message: 'Read the environment only in src/config/env.ts and pass values down.' },
      ],
    },
  },
  {
    // Layering: src/app is the only composition root and src/cli the only command-line adapter.
    // Domain code (everything else under src/) imports neither; app may not import cli either.
    files: ['src/**/*.{ts,tsx}'],
    ignores: ['src/app/**', 'src/cli/**', 'src/index.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['**/app/*'],
              message:
                'Only src/app, src/cli and src/index.ts import the composition root (src/app). Move the shared type to a domain module (e.g. src/lifecycle/).',
            },
            { group: ['**/cli/*'], message: 'Domain code does not import the CLI adapter (src/cli).' },
          ],
        },
      ],
    },
  },
  {
    files: ['src/app/**/*.ts', 'src/index.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [{ group: ['**/cli/*'], message: 'The composition root and the public API do not import the CLI adapter (src/cli).' }],
        },
      ],
    },
  },
  {
    files: ['src/config/env.ts', 'test/**', 'bench/**', 'vitest.config.ts', 'bin/**'],
    rules: { 'no-restricted-properties': 'off' },
  },
);
