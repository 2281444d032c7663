// The policy of the pending retry proxy for the runner container hooks,
// written here from its facts, to compare against (JOB_CLIENTS=retry-proxy,
// src/job/clients.ts). None of its code or text is used.
//
// Source: actions/runner-container-hooks pull request #338 "Add retries to
// calls to the k8s api" (open; https://github.com/actions/runner-container-hooks/pull/338),
// its description (2026-04-20) and its head commit b97b61e (2026-06-16),
// packages/k8s/src/k8s/index.ts. The facts, and where each comes from:
//
// - What is wrapped: CoreV1Api, BatchV1Api and AuthorizationV1Api, each in a
//   Proxy whose every method goes through one retry loop (description;
//   head commit). The exec client is NOT wrapped: the hooks keep making
//   `new k8s.Exec(kc)` per exec (head commit: no change to the exec code).
//   So here only CoreV1Api is wrapped (the job uses no other API client)
//   and exec stays plain.
// - Attempts: 4 in all, the first and 3 retries (description: "capped at 4
//   attempts total"; head commit: 3 retries).
// - Which errors are retried: an ApiException with HTTP status 408, 429,
//   500, 502, 503 or 504; any other ApiException is not. Otherwise an error
//   whose `code`, or the `code` of an Error in its `cause` chain, is
//   ECONNREFUSED, ECONNRESET, ETIMEDOUT, ENETUNREACH, EAI_AGAIN or ENOTFOUND
//   (description: the list and "network codes via cause chain"; head
//   commit: the status check wins when the error is an ApiException).
// - Backoff: "exponential backoff + jitter" (description). The schedule
//   (head commit): before retry k (k = 1, 2, 3) the wait is
//   1000 ms * 2^(k-1) * a uniform factor in [0.5, 1.5): 0.5-1.5 s, 1-3 s,
//   2-6 s; 3.5 to 10.5 s of waiting in all, 7 s on average. No timeout per
//   attempt and no deadline.
// - Retry-After: read only on a 429 ("Honors Retry-After on 429 (capped at
//   30s)", description), as a number of seconds > 0, capped at 30 s, used
//   in place of the backoff; missing, not a number (an HTTP date) or <= 0:
//   the backoff (head commit). On a 503 it is not read.
// - Create: a 409 on a pod create is answered by reading the pod back by
//   name and returning it; a 409 on a secret create reads the secret back
//   and returns it when its data keys and values equal the body's, else
//   throws (description: "handle 409 by reading back the existing
//   resource"; head commit: the data check for secrets). This is done for
//   any 409, the first attempt's included, and the pod is not checked to be
//   ours (head commit).
// - Delete: a 404 on a pod or secret delete is swallowed (description).
// - Each retry prints a warning naming the method, the error and the wait
//   (head commit; worded here in our own way).
//
// Where this file differs, and why:
// - In the PR the 409 read-back and the 404 swallow live in the hooks' own
//   helpers (createJobPod, createDockerSecret, deletePod, deleteSecret),
//   around calls through the retrying client. This job has no such helpers
//   (its calls are in src/job/k8s.ts, shared by every client mode), so the
//   same handling is applied here to the same four API methods, after their
//   retries, with the read-back itself retried: the calls on the wire are the
//   same.
// - The cause chain is followed at most 16 deep (the PR has no bound; a
//   cyclic chain would loop). Header names are matched case-insensitively.

import { ApiException, type CoreV1Api } from '@kubernetes/client-node';

const ATTEMPTS = 4;
const FIRST_WAIT_MS = 1000;
const JITTER_LOW = 0.5;
const JITTER_SPAN = 1.0;
const RETRY_AFTER_CAP_MS = 30_000;
const CAUSE_DEPTH = 16;

const RETRIED_STATUSES: ReadonlySet<number> = new Set([408, 429, 500, 502, 503, 504]);
const RETRIED_NETWORK_CODES: ReadonlySet<string> = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'ENETUNREACH', 'EAI_AGAIN', 'ENOTFOUND']);

const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function statusOf(error: unknown): number | null {
  return error instanceof ApiException && typeof error.code === 'number' ? error.code : null;
}

/** The network code that makes `error` retried, or null (searched along the cause chain). */
function networkCodeOf(error: unknown): string | null {
  let current: unknown = error;
  for (let depth = 0; depth < CAUSE_DEPTH && current instanceof Error; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && RETRIED_NETWORK_CODES.has(code)) return code;
    current = (current as { cause?: unknown }).cause;
  }
  return null;
}

/** Whether the proxy retries after `error`: a listed status, else a listed network code. */
export function isRetried(error: unknown): boolean {
  if (error instanceof ApiException) return RETRIED_STATUSES.has(error.code);
  return networkCodeOf(error) !== null;
}

/** The jittered exponential wait before retry `k` (1, 2 or 3). */
function backoffMs(k: number): number {
  return FIRST_WAIT_MS * 2 ** (k - 1) * (JITTER_LOW + Math.random() * JITTER_SPAN);
}

/** The wait before retry `k` after `error`: a 429's Retry-After seconds (capped), else the backoff. */
export function waitBeforeRetryMs(error: unknown, k: number): number {
  if (statusOf(error) !== 429) return backoffMs(k);
  const headers = (error as { headers?: unknown }).headers;
  let value: unknown;
  if (headers && typeof headers === 'object') {
    for (const [name, v] of Object.entries(headers as Record<string, unknown>)) {
      if (name.toLowerCase() === 'retry-after') value = v;
    }
  }
  const seconds = Number(value);
  if (value === undefined || value === null || value === '' || !Number.isFinite(seconds) || seconds <= 0) return backoffMs(k);
  return Math.min(seconds * 1000, RETRY_AFTER_CAP_MS);
}

function whatFailed(error: unknown): string {
  const status = statusOf(error);
  if (status !== null) return `HTTP ${status}`;
  return networkCodeOf(error) ?? (error instanceof Error ? error.message : String(error));
}

async function withRetries<T>(method: string, call: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await call();
    } catch (error) {
      if (attempt >= ATTEMPTS || !isRetried(error)) throw error;
      const waitMs = waitBeforeRetryMs(error, attempt);
      process.stdout.write(`::warning::retry proxy: ${method} failed (${whatFailed(error)}); attempt ${attempt + 1} of ${ATTEMPTS} in ${Math.round(waitMs)} ms\n`);
      await pause(waitMs);
    }
  }
}

type Method = (this: unknown, ...args: unknown[]) => Promise<unknown>;

interface ObjectParam {
  name?: string;
  namespace?: string;
  body?: { metadata?: { name?: string }; data?: Record<string, string> };
}

function sameData(sent: Record<string, string> | undefined, found: Record<string, string> | undefined): boolean {
  const a = sent ?? {};
  const b = found ?? {};
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => Object.prototype.hasOwnProperty.call(b, k) && a[k] === b[k]);
}

/**
 * `core` behind the pending proxy's policy: every method retried as above;
 * createNamespacedPod / createNamespacedSecret read back on 409;
 * deleteNamespacedPod / deleteNamespacedSecret swallow 404.
 */
export function retryProxy(core: CoreV1Api): CoreV1Api {
  const retried = (name: string, args: unknown[]): Promise<unknown> => {
    const method = (core as unknown as Record<string, Method>)[name];
    return withRetries(name, () => method.apply(core, args));
  };
  const special: Record<string, (args: unknown[]) => Promise<unknown>> = {
    async createNamespacedPod(args) {
      try {
        return await retried('createNamespacedPod', args);
      } catch (error) {
        const p = args[0] as ObjectParam | undefined;
        if (statusOf(error) !== 409 || !p?.body?.metadata?.name) throw error;
        return retried('readNamespacedPod', [{ name: p.body.metadata.name, namespace: p.namespace }]);
      }
    },
    async createNamespacedSecret(args) {
      try {
        return await retried('createNamespacedSecret', args);
      } catch (error) {
        const p = args[0] as ObjectParam | undefined;
        const name = p?.body?.metadata?.name;
        if (statusOf(error) !== 409 || !name) throw error;
        const found = (await retried('readNamespacedSecret', [{ name, namespace: p.namespace }])) as { data?: Record<string, string> };
        if (!sameData(p.body?.data, found?.data)) throw new Error(`retry proxy: secret ${name} exists with other data than the create sent; not used`);
        return found;
      }
    },
    async deleteNamespacedPod(args) {
      try {
        return await retried('deleteNamespacedPod', args);
      } catch (error) {
        if (statusOf(error) === 404) return undefined;
        throw error;
      }
    },
    async deleteNamespacedSecret(args) {
      try {
        return await retried('deleteNamespacedSecret', args);
      } catch (error) {
        if (statusOf(error) === 404) return undefined;
        throw error;
      }
    },
  };
  return new Proxy(core, {
    get(target, prop, receiver) {
      const value: unknown = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function' || typeof prop !== 'string') return value;
      const handler = special[prop];
      if (handler) return (...args: unknown[]) => handler(args);
      return (...args: unknown[]) => retried(prop, args);
    },
  });
}
