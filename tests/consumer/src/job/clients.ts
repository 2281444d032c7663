// The one place where the job's Kubernetes clients are made. Everything else
// in src/job/ receives them from here, so trying another way of making them
// (a wrapper that retries, say) is a change to these lines only.
//
// JOB_CLIENTS picks how (bench/job.js compares them):
// - plain (the default): the hooks' clients as they are today;
// - retry-proxy: the pending retry proxy's policy for the hooks, written
//   here (src/job/retry-proxy.ts; exec stays plain, as there);
// - resilient: this package's wrappers.

import { CoreV1Api, Exec, type KubeConfig } from '@kubernetes/client-node';
import { resilientExec, resilientKubeConfig } from 'k8s-auth-preflight';
import { retryProxy } from './retry-proxy';

export interface JobClients {
  /** Pods and secrets: create, read, list, delete. */
  core: CoreV1Api;
  /** A fresh exec client, one per exec, as the hooks make them. */
  newExec: () => Exec;
}

export const CLIENT_MODES = ['plain', 'retry-proxy', 'resilient'] as const;

// ---- client construction: swap these lines ---------------------------------
export function makeClients(kc: KubeConfig): JobClients {
  const mode = process.env.JOB_CLIENTS || 'plain';
  switch (mode) {
    case 'plain':
      return { core: kc.makeApiClient(CoreV1Api), newExec: () => new Exec(kc) };
    case 'retry-proxy':
      return { core: retryProxy(kc.makeApiClient(CoreV1Api)), newExec: () => new Exec(kc) };
    case 'resilient':
      return { core: resilientKubeConfig(kc).makeApiClient(CoreV1Api), newExec: () => resilientExec(kc) };
    default:
      throw new Error(`JOB_CLIENTS=${JSON.stringify(mode.slice(0, 40))} is not a client mode; use one of ${CLIENT_MODES.join(', ')}`);
  }
}
// -----------------------------------------------------------------------------
