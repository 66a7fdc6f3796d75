// Lint rules that guard the product contract, not just style:
// stdout belongs to JSON-RPC, so `console` is banned in src/.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  // bench/results holds run outputs (and copies of builds measured against each other).
  {
    ignores: [
      'dist/**',
      'node_modules/**',
      'coverage/**',
      'bench/results/**',
      'docs/.vitepress/dist/**',
      'docs/.vitepress/cache/**',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    // Node's globals, for plain .mjs scripts (TypeScript files get them from @types/node).
    languageOptions: {
      globals: Object.fromEntries(
        [
          'process',
          'console',
          'Buffer',
          'URL',
          'performance',
          'setTimeout',
          'clearTimeout',
          'setInterval',
          'clearInterval',
          'setImmediate',
          'queueMicrotask',
          'fetch',
        ].map((name) => [name, 'readonly']),
      ),
    },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    files: ['src/**/*.ts'],
    rules: { 'no-console': 'error' },
  },
);
