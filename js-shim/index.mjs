// ESM entry: the CommonJS entry's exports, by name and as the default.
export * from './index.js';
export { default } from './index.js';
