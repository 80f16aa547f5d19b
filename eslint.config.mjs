import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'src/generated/**', 'src/metadata.ts', 'coverage/**', '.data/**', 'bench/.tmp/**', 'clients/typescript/dist/**', 'clients/typescript/src/schema.ts', '.dev-build*/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: { process: 'readonly', console: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly',
        setInterval: 'readonly', clearInterval: 'readonly', URL: 'readonly', Buffer: 'readonly', fetch: 'readonly',
        AbortController: 'readonly', AbortSignal: 'readonly', structuredClone: 'readonly', performance: 'readonly',
        setImmediate: 'readonly', TextEncoder: 'readonly', TextDecoder: 'readonly', Response: 'readonly', Request: 'readonly', Headers: 'readonly' },
    },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-explicit-any': 'warn',
      'no-restricted-properties': ['error', { object: 'process', property: 'env', message: 'Read configuration through AppConfig (src/config).' }],
    },
  },
  {
    files: ['src/config/**', 'scripts/**', 'bench/**', 'test/**', '*.config.*', 'prisma.config.ts'],
    rules: { 'no-restricted-properties': 'off' },
  },
);
