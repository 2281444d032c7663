// A hooks-shaped job: the entry point of one hook process that runs a whole
// hook command (prepare_job, run_script_step or cleanup_job) against the
// cluster, after the permission check, as the runner container hooks do.
// Bundled with ncc on its own (dist-job/) by tests/js/job.test.js and
// bench/job/; src/index.ts is the check alone.
//
// Environment: KUBECONFIG, ACTIONS_RUNNER_POD_NAME (the runner's name: the
// job's label and pod name), ACTIONS_RUNNER_KUBERNETES_NAMESPACE,
// RUNNER_WORKSPACE (its parent is the work folder; _temp in it is copied to
// the pod), RUNNER_TEMP (the check's verdict cache).
// Output: `job step ok: <command>` and exit 0, or `::error::<message>` and
// exit 1 (a failed exec set-up is printed as what the exec client rejected
// with, as the hooks print it).

import * as fs from 'node:fs';
import { KubeConfig } from '@kubernetes/client-node';
import { configureAuthPreflight, isAuthPermissionsOK, isPreflightInconclusiveError, type RequiredPermission } from 'k8s-auth-preflight';
import { makeClients } from './job/clients';
import type { Job } from './job/k8s';
import { cleanupJob, prepareJob, runScriptStep, type PrepareArgs, type ScriptArgs } from './job/steps';

interface HookInput {
  command?: unknown;
  responseFile?: unknown;
  args?: unknown;
  state?: unknown;
}

const requiredPermissions: RequiredPermission[] = [
  { group: '', resource: 'pods', subresource: '', verbs: ['get', 'list', 'create', 'delete'] },
  { group: '', resource: 'pods', subresource: 'exec', verbs: ['get', 'create'] },
  { group: '', resource: 'pods', subresource: 'log', verbs: ['get', 'list', 'watch'] },
  { group: '', resource: 'secrets', subresource: '', verbs: ['get', 'list', 'create', 'delete'] },
];

const kc = new KubeConfig();
kc.loadFromDefault();
const namespace = process.env.ACTIONS_RUNNER_KUBERNETES_NAMESPACE || kc.getContextObject(kc.getCurrentContext())?.namespace || 'default';
configureAuthPreflight({ kubeConfig: kc, namespace, requiredPermissions });

async function run(): Promise<string> {
  const input = JSON.parse(fs.readFileSync(0, 'utf8')) as HookInput;
  const runnerName = process.env.ACTIONS_RUNNER_POD_NAME;
  if (!runnerName) throw new Error('ACTIONS_RUNNER_POD_NAME is not set');
  if (!(await isAuthPermissionsOK())) throw new Error(`the service account lacks permissions in namespace "${namespace}"`);
  const job: Job = { clients: makeClients(kc), namespace, runnerName };
  const args = (input.args ?? {}) as Record<string, unknown>;
  switch (input.command) {
    case 'prepare_job':
      await prepareJob(job, args as PrepareArgs, String(input.responseFile ?? ''));
      break;
    case 'run_script_step':
      await runScriptStep(job, args as ScriptArgs, (input.state ?? {}) as { jobPod?: string });
      break;
    case 'cleanup_job':
      await cleanupJob(job);
      break;
    default:
      throw new Error(`unknown hook command ${JSON.stringify(input.command)}`);
  }
  return String(input.command);
}

run().then(
  (command) => {
    process.stdout.write(`job step ok: ${command}\n`);
    process.exit(0);
  },
  (error: unknown) => {
    let message: string;
    if (error instanceof Error) message = error.message;
    else {
      try {
        message = JSON.stringify(error);
      } catch {
        message = String(error);
      }
    }
    const prefix = isPreflightInconclusiveError(error) ? 'permission check inconclusive (not a denial): ' : '';
    process.stdout.write(`::error::${prefix}${message}\n`);
    process.exit(1);
  },
);
