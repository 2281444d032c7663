// ESM entry: the same objects as the CommonJS entry.
import shim from './index.js';

export const {
  createAuthPreflight,
  configureAuthPreflight,
  isAuthPermissionsOK,
  retryK8sApiCall,
  withAbortSignal,
  defaultRequiredPermissions,
  PreflightInconclusiveError,
  PreflightError,
  isPreflightInconclusiveError,
  isPreflightError,
} = shim;
export default shim;
