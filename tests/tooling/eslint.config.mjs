// ESLint for the console's pages (services/console/web, plain ES modules run by the browser as
// they are) and the browser tests that drive them (Node.js). Run by scripts/check-js from the
// checkout's root; test tooling only, installed by scripts/setup --test.
import js from '@eslint/js';
import globals from 'globals';

const style = {
  'eqeqeq': ['error', 'always'],
  'no-var': 'error',
  'prefer-const': 'error',
  'no-unused-vars': ['error', {args: 'none'}],
  'no-implicit-globals': 'error',
  'no-eval': 'error',
  'no-implied-eval': 'error',
  'semi': ['error', 'always'],
  'quotes': ['error', 'single', {avoidEscape: true, allowTemplateLiterals: true}],
  'indent': ['error', 2, {SwitchCase: 1, ignoredNodes: ['CallExpression *', 'NewExpression *',
    'ArrayExpression *', 'ObjectExpression *', 'ConditionalExpression *', 'BinaryExpression *',
    'LogicalExpression *', 'ArrowFunctionExpression *', 'ReturnStatement *']}],
  'max-len': ['error', {code: 110, ignoreUrls: true, ignoreStrings: true,
    ignoreTemplateLiterals: true, ignoreRegExpLiterals: true}],
  'no-trailing-spaces': 'error',
  'eol-last': 'error',
  'comma-dangle': ['error', 'always-multiline'],
};

// The size limits of the project's production sources (scripts/check-size for C++ and Python).
const size = {
  'max-lines': ['error', {max: 600}],
  'max-lines-per-function': ['error', {max: 150}],
};

export default [
  {
    files: ['services/console/web/**/*.js'],
    languageOptions: {ecmaVersion: 2022, sourceType: 'module', globals: globals.browser},
    rules: {...js.configs.recommended.rules, ...style, ...size},
  },
  {
    files: ['tests/console/**/*.mjs'],
    languageOptions: {ecmaVersion: 2022, sourceType: 'module',
      globals: {...globals.node, ...globals.browser}},
    rules: {...js.configs.recommended.rules, ...style},
  },
];
