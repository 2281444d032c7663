// The one place where the job's Kubernetes clients are made. Everything else
// in src/job/ receives them from here, so trying another way of making them
// (a wrapper that retries, say) is a change to these lines only.
// JOB_CLIENTS picks the way: `plain` (the default: client-node as it is) or
// `resilient` (this package's call wrappers).

import { CoreV1Api, Exec, type KubeConfig } from '@kubernetes/client-node';
import { resilientExec, resilientKubeConfig } from 'k8s-auth-preflight';

export interface JobClients {
  /** Pods and secrets: create, read, list, delete. */
  core: CoreV1Api;
  /** A fresh exec client, one per exec, as the hooks make them. */
  newExec: () => Exec;
}

// ---- client construction: swap these lines ---------------------------------
export function makeClients(kc: KubeConfig): JobClients {
  const mode = process.env.JOB_CLIENTS || 'plain';
  switch (mode) {
    case 'plain':
      return {
        core: kc.makeApiClient(CoreV1Api),
        newExec: () => new Exec(kc),
      };
    case 'resilient':
      return {
        core: resilientKubeConfig(kc).makeApiClient(CoreV1Api),
        newExec: () => resilientExec(kc),
      };
    default:
      throw new Error(`JOB_CLIENTS=${JSON.stringify(mode)}: expected plain or resilient`);
  }
}
// -----------------------------------------------------------------------------
