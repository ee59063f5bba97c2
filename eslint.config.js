// ESLint over the TypeScript sources with type information (typescript-eslint's
// type-checked recommended rules). Promises get the strictest attention: every write and
// most reads are asynchronous, and a promise nobody awaits loses its error silently.
import js from '@eslint/js';
import { defineConfig } from 'eslint/config';
import tseslint from 'typescript-eslint';

export default defineConfig(
  // Generated and local files: the database, benchmark output, tsx's cache.
  { ignores: ['node_modules/', 'data/', 'dist/', 'bench-results/', '.tsx-cache/', 'coverage/'] },
  js.configs.recommended,
  tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
    },
  },
  // Plain JavaScript (this file) is outside tsconfig.json: no type information for it.
  { files: ['**/*.js', '**/*.mjs', '**/*.cjs'], extends: [tseslint.configs.disableTypeChecked] },
);
