// The one place where the job's Kubernetes clients are made. Everything else
// in src/job/ receives them from here, so trying another way of making them
// (a wrapper that retries, say) is a change to these lines only.

import { CoreV1Api, Exec, type KubeConfig } from '@kubernetes/client-node';

export interface JobClients {
  /** Pods and secrets: create, read, list, delete. */
  core: CoreV1Api;
  /** A fresh exec client, one per exec, as the hooks make them. */
  newExec: () => Exec;
}

// ---- client construction: swap these lines ---------------------------------
export function makeClients(kc: KubeConfig): JobClients {
  return {
    core: kc.makeApiClient(CoreV1Api),
    newExec: () => new Exec(kc),
  };
}
// -----------------------------------------------------------------------------
