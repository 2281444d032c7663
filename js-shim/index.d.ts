// Type declarations for k8s-auth-preflight.

import type { Readable, Writable } from 'node:stream';

/** One row of the permission table: a resource and the verbs needed on it. */
export interface RequiredPermission {
  /** API group; the core group is "". */
  group: string;
  /** Resource, e.g. "pods". */
  resource: string;
  /** Subresource, e.g. "exec"; "" for none. */
  subresource?: string;
  /** The verbs needed. */
  verbs?: readonly string[];
  /** A single verb, for tables that list one per row. */
  verb?: string;
}

/** One verb on one resource, as named in a denial. */
export interface Permission {
  verb: string;
  group: string;
  resource: string;
  subresource: string;
}

export type Verdict = 'allowed' | 'denied' | 'inconclusive' | 'error';

/** Where an allowed verdict came from. */
export type Source = 'reviews' | 'cache' | 'graceCache';

/** What a check decided (see the README for what each verdict prints). */
export interface Outcome {
  verdict: Verdict;
  /** For 'allowed': this check's reviews, a fresh cached verdict, or a stale one used because the API was unreachable. */
  source: Source | null;
  /** For 'denied': exactly the permissions the API denied. */
  missing: Permission[];
  /** One line a person can act on. */
  message: string;
  /** Warnings printed for this check. */
  warnings: string[];
  /** The cache record written, if any. */
  record: string | null;
  /** True when the cached verdict was deleted (a denial). */
  deleteRecord: boolean;
  /** For `inconclusive`: true when the step goes on anyway (`ACTIONS_RUNNER_PREFLIGHT_ON_INCONCLUSIVE=proceed`). */
  proceed: boolean;
  /** The last transient error seen, if any. */
  lastError: string | null;
  /** Requests this check started. */
  requests: number;
  /** Permissions the SelfSubjectRulesReview proved (no access review needed). */
  provenByRules: number;
  /** Time from the start of the check to the verdict, in ms. */
  elapsedMs: number;
}

/**
 * Where messages go. A missing `warning` falls back to stdout workflow
 * commands; a missing `debug` prints nothing at debug level (one line per
 * attempt and one per check, for step debug logging).
 */
export interface PreflightLogger {
  debug?(message: string): void;
  info?(message: string): void;
  warning?(message: string): void;
  error?(message: string): void;
}

/** The subset of client-node's AuthorizationV1Api that the check calls. */
export interface AuthorizationApiLike {
  createSelfSubjectAccessReview(
    param: { body: unknown },
    options?: unknown,
  ): Promise<{ status?: { allowed?: boolean; reason?: string } } | undefined>;
  /** Optional: without it every permission is asked with an access review. */
  createSelfSubjectRulesReview?(
    param: { body: unknown },
    options?: unknown,
  ): Promise<{ status?: { resourceRules?: unknown[]; incomplete?: boolean; evaluationError?: string } } | undefined>;
}

/** The subset of client-node's KubeConfig that the check uses. */
export interface KubeConfigLike {
  getCurrentUser(): unknown;
  makeApiClient(apiClass: unknown): unknown;
}

export interface AuthPreflightOptions {
  /** The host's loaded KubeConfig: the API client and the cache key come from it. */
  kubeConfig?: KubeConfigLike;
  /** The namespace the hooks work in. */
  namespace: string;
  /** Defaults to `defaultRequiredPermissions`. */
  requiredPermissions?: readonly RequiredPermission[];
  /** Use this client instead of one made from `kubeConfig`. */
  authorizationApi?: AuthorizationApiLike;
  /** Folder for the cache file; default $RUNNER_TEMP (from `env`). With neither, nothing is cached and one warning says so. */
  cacheDir?: string;
  /** Where ACTIONS_RUNNER_PREFLIGHT_* settings are read; default process.env. */
  env?: Record<string, string | undefined>;
  /** Default: @actions/core if the host has it, else stdout workflow commands. */
  logger?: PreflightLogger;
  /** Clock, epoch ms; default Date.now. */
  now?: () => number;
  /** Randomness for jitter, [0, 1); default OS randomness inside the core. */
  random?: () => number;
  /** Sees every action and result, for timelines and tests. */
  observer?: (event: Record<string, unknown>) => void;
}

export interface AuthPreflight {
  /**
   * Resolves true when every permission is granted (or a usable cached
   * verdict says so), false on a definitive denial (the missing permissions
   * are logged). Rejects with PreflightInconclusiveError when the API gave no
   * definitive answer in time (NOT a denial), PreflightError on a fatal error.
   */
  isAuthPermissionsOK(): Promise<boolean>;
  /** The outcome of the last check, or null before the first. */
  lastOutcome(): Outcome | null;
}

export function createAuthPreflight(options: AuthPreflightOptions): AuthPreflight;

/** Sets the options the zero-argument isAuthPermissionsOK() uses. */
export function configureAuthPreflight(options: AuthPreflightOptions): AuthPreflight;

/**
 * Drop-in for the hooks' isAuthPermissionsOK(): the configured options, else
 * the default kubeconfig, ACTIONS_RUNNER_KUBERNETES_NAMESPACE (or the current
 * context's namespace) and defaultRequiredPermissions.
 */
export function isAuthPermissionsOK(): Promise<boolean>;

/** Options of the call wrappers (the settings are read once, from env). */
export interface CallOptions {
  env?: Record<string, string | undefined>;
  logger?: PreflightLogger;
  /** The wall clock, read once per settings environment; the calls then run on the monotonic clock. */
  now?: () => number;
  observer?: (event: Record<string, unknown>) => void;
}

export interface RetryOptions extends CallOptions {
  random?: () => number;
  /** The client method fn makes (its kind's rules apply); without it, fn is retried as a read. */
  method?: string;
  /**
   * The kubeconfig fn's client uses: its credential is hidden from every
   * line and error, and its server is the cluster an outage is remembered
   * for. Default: the default kubeconfig (KUBECONFIG, ~/.kube/config, in-cluster).
   */
  kubeConfig?: object;
  /** The cluster fn calls (its server URL), when it is not kubeConfig's. */
  cluster?: string;
}

/**
 * `kc`, whose makeApiClient(ApiClass) makes clients of the same type whose
 * calls run under the call policy: reads and lists retried, a create's 409
 * on a retry read back and returned only when the object is its own, a
 * delete's 404 on a retry taken as done; patch, replace and unknown methods
 * as they are. Everything else is kc's own.
 */
export function resilientKubeConfig<K extends { makeApiClient: Function }>(kc: K, options?: CallOptions): K;

/**
 * What resilientExec returns: client-node's own Exec, its exec() wrapped.
 * These declarations do not import client-node's; where an Exec is expected
 * (a variable or return typed `Exec`), the type is inferred as that Exec.
 */
export interface ResilientExec {
  exec(
    namespace: string,
    podName: string,
    containerName: string,
    command: string | string[],
    stdout: Writable | null,
    stderr: Writable | null,
    stdin: Readable | null,
    tty: boolean,
    statusCallback?: (status: any) => void,
  ): Promise<any>;
}

/** client-node's Log, as resilientLog returns it. */
export interface ResilientLog {
  log(namespace: string, podName: string, containerName: string, stream: Writable, options?: object): Promise<AbortController>;
}

/**
 * An Exec for kc whose exec(...) retries the connection's set-up only when
 * the command provably never started: the connection that would carry it
 * was never made (refused, unreachable, TLS or DNS failed, a proxy that
 * could not reach the apiserver). An HTTP answer instead of the protocol
 * switch, or an open stream, is never retried.
 */
export function resilientExec<E extends ResilientExec = ResilientExec>(kc: object, options?: CallOptions): E;

/**
 * True when `status`, as an exec's status callback got it from
 * resilientExec, is one this package gave in place of the command's own:
 * the command did not run to its end as the caller saw it (reason
 * 'StreamCut', 'StreamLost', 'OutputLost', 'ExitCodeLost',
 * 'ExitCodeUnknown', 'RunRecordMissing', 'PodGone', 'PodNotRunning' or
 * 'Cancelled'). A copy must not be taken as done on such a status.
 */
export function isExecIncomplete(status: unknown): boolean;

/** One copy: the pod's container, and the two folders. */
export interface CopySpec {
  namespace: string;
  pod: string;
  container: string;
  /** The folder copied: the runner's (copyToPod) or the pod's (copyFromPod). */
  from: string;
  /** Into the pod: the folder its contents go into. Out of it: the runner's folder that gets `from`'s last part. */
  to: string;
}

/** A copy that arrived whole: its attempts, and the archive's size and SHA-256. */
export interface CopyResult {
  attempts: number;
  bytes: number;
  sha256: string;
}

/**
 * Copies the runner's folder `from` into the pod's folder `to` with one
 * exec of tar when healthy; resolves once the pod has unpacked the very
 * bytes sent (counted and checked on both sides, in the same exec). A cut
 * stream or bytes that arrived different copy again, after what the
 * attempt before may have written is removed; rejects with code
 * 'PREFLIGHT_COPY_FAILED' when it cannot arrive whole.
 */
export function copyToPod(kc: object, spec: CopySpec, options?: CallOptions): Promise<CopyResult>;

/** Copies the pod's folder `from` into the runner's folder `to` (as `to/<from's last part>`), the same way. */
export function copyFromPod(kc: object, spec: CopySpec, options?: CallOptions): Promise<CopyResult>;

/** A Log for kc whose log(...) is retried as a read. */
export function resilientLog<L extends ResilientLog = ResilientLog>(kc: object, options?: CallOptions): L;

/**
 * A call the policy gave up on: the message says which call, for how long,
 * the last error, and whose fault it was; `cause` is a copy of the last
 * error the call got (its name, status or code, codes and message, the
 * credential hidden).
 */
export class CallGaveUpError extends Error {
  readonly code: 'PREFLIGHT_CALL_GAVE_UP';
}

/** True for a CallGaveUpError from any copy of this package. */
export function isCallGaveUpError(e: unknown): e is CallGaveUpError;

/**
 * Calls fn(signal) as one call under the call policy (a read, unless
 * options.method names the client method). The signal aborts when an
 * attempt times out; pass withAbortSignal(signal) as a client-node call's
 * options to close its socket.
 */
export function retryK8sApiCall<T>(fn: (signal: AbortSignal) => Promise<T>, options?: RetryOptions): Promise<T>;

/** Options for a client-node object-parameter call that abort it on `signal`. */
export function withAbortSignal(signal: AbortSignal): {
  middleware: unknown[];
  middlewareMergeStrategy: 'append';
};

/** The permissions the runner container hooks need (13 reviews). */
export const defaultRequiredPermissions: readonly RequiredPermission[];

/** The API gave no definitive answer in time. This is NOT a permissions denial. */
export class PreflightInconclusiveError extends Error {
  readonly code: 'PREFLIGHT_INCONCLUSIVE';
  readonly outcome: Outcome;
  constructor(outcome: Outcome);
}

/** A fatal, non-retryable error during the check (e.g. a malformed response). */
export class PreflightError extends Error {
  readonly code: 'PREFLIGHT_ERROR';
  readonly outcome: Outcome;
  constructor(outcome: Outcome);
}

/** True for a PreflightInconclusiveError from any copy of this package. */
export function isPreflightInconclusiveError(e: unknown): e is PreflightInconclusiveError;

/** True for a PreflightError from any copy of this package. */
export function isPreflightError(e: unknown): e is PreflightError;
