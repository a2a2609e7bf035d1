import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', '.postroom/**', 'coverage/**', 'bench/results/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: { process: 'readonly', console: 'readonly', Buffer: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly', setInterval: 'readonly', clearInterval: 'readonly', setImmediate: 'readonly', URL: 'readonly' },
    },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      'no-restricted-properties': ['error', { object: 'process', property: 'env', message: 'Read the environment only in src/config/env.ts and pass values down.' }],
    },
  },
  {
    files: ['src/config/env.ts', 'test/**', 'bench/**', 'vitest.config.ts', 'bin/**'],
    rules: { 'no-restricted-properties': 'off' },
  },
);
