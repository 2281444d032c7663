// The three hook commands of a Kubernetes-mode job, making the same kinds of
// calls in the same order as the runner container hooks do (see k8s.ts for
// their waits and retries). Written for this repository's tests.

import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import {
  type Job,
  copyFromPod,
  copyToPod,
  createJobPod,
  createPullSecret,
  describeError,
  execInPod,
  prunePods,
  pruneSecrets,
  waitForPodRunning,
} from './k8s';

export interface PrepareArgs {
  container?: { image?: string; registry?: { serverUrl?: string; username?: string; password?: string } };
}

export interface ScriptArgs {
  entryPoint?: string;
  entryPointArgs?: string[];
  environmentVariables?: Record<string, string>;
  workingDirectory?: string;
}

const DEFAULT_POD_TIMEOUT_S = 600;

function podTimeoutSeconds(): number {
  const value = Number.parseInt(process.env.ACTIONS_RUNNER_PREPARE_JOB_TIMEOUT_SECONDS ?? '', 10);
  return Number.isInteger(value) && value > 0 ? value : DEFAULT_POD_TIMEOUT_S;
}

/**
 * The work folder in the job container: JOB_POD_WORK, default /__w (the
 * hooks' volume). The loopback apiserver's real processes take a folder of
 * the pod's own here, never the host's /__w.
 */
function podWork(): string {
  return process.env.JOB_POD_WORK || '/__w';
}

/** The runner's work folder: the parent of RUNNER_WORKSPACE. */
function workFolder(): string {
  const workspace = process.env.RUNNER_WORKSPACE;
  if (!workspace) throw new Error('RUNNER_WORKSPACE is not set');
  return path.dirname(workspace);
}

export async function prepareJob(job: Job, args: PrepareArgs, responseFile: string): Promise<void> {
  const image = args.container?.image;
  if (!image) throw new Error('Job Container is required.');
  await prunePods(job);

  let podName: string;
  try {
    const registry = args.container?.registry;
    const secret = registry
      ? await createPullSecret(job, {
          server: registry.serverUrl || 'https://index.docker.io/v1/',
          username: registry.username ?? '',
          password: registry.password ?? '',
        })
      : null;
    const pod = await createJobPod(job, image, secret);
    if (!pod.metadata?.name) throw new Error('created pod should have metadata.name');
    podName = pod.metadata.name;
  } catch (error) {
    await prunePods(job);
    throw new Error(`failed to create job pod: ${describeError(error)}`);
  }

  try {
    await waitForPodRunning(job, podName, podTimeoutSeconds());
  } catch (error) {
    await prunePods(job);
    throw new Error(`pod failed to come online with error: ${describeError(error)}`);
  }

  await copyToPod(job, podName, workFolder(), podWork());

  let isAlpine = true;
  try {
    await execInPod(job, podName, ['sh', '-c', 'grep -qi "^ID=alpine" /etc/os-release']);
  } catch {
    isAlpine = false;
  }

  const response = { state: { jobPod: podName }, context: { container: { image, ports: {} } }, isAlpine };
  fs.mkdirSync(path.dirname(responseFile), { recursive: true });
  fs.writeFileSync(responseFile, JSON.stringify(response));
}

const shellQuote = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`;

/** Writes the step's wrapper script into the runner's temp folder; returns its local and container paths. */
function writeStepScript(args: ScriptArgs): { localPath: string; podPath: string } {
  const lines = ['#!/bin/sh -l'];
  if (args.workingDirectory) lines.push(`cd ${shellQuote(args.workingDirectory)}`);
  for (const [key, value] of Object.entries(args.environmentVariables ?? {})) lines.push(`export ${key}=${shellQuote(value)}`);
  lines.push(`exec ${[args.entryPoint ?? 'sh', ...(args.entryPointArgs ?? [])].map(shellQuote).join(' ')}`);
  const name = `${crypto.randomUUID()}.sh`;
  const localPath = path.join(workFolder(), '_temp', name);
  fs.mkdirSync(path.dirname(localPath), { recursive: true });
  fs.writeFileSync(localPath, `${lines.join('\n')}\n`);
  return { localPath, podPath: `${podWork()}/_temp/${name}` };
}

export async function runScriptStep(job: Job, args: ScriptArgs, state: { jobPod?: string }): Promise<void> {
  const pod = state.jobPod;
  if (!pod) throw new Error('the hook state has no jobPod');
  const script = writeStepScript(args);
  const localTemp = path.join(workFolder(), '_temp');

  const work = shellQuote(podWork());
  await execInPod(job, pod, ['sh', '-c', `mkdir -p ${work}/_temp ${work}/_temp_pre`]);
  await copyToPod(job, pod, localTemp, `${podWork()}/_temp_pre`);
  try {
    await execInPod(job, pod, ['sh', '-c', `cp -a ${work}/_temp_pre/. ${work}/_temp/ && rm -rf ${work}/_temp_pre`]);
  } catch (error) {
    throw new Error(`failed to merge temp dirs: ${describeError(error)}`);
  }

  const command = ['sh', '-e', script.podPath];
  // The runner counts this command in the apiserver's exec log.
  process.stdout.write(`script exec: ${JSON.stringify(command)}\n`);
  try {
    // The script's output goes straight to the hook's stdout and stderr, as it comes.
    await execInPod(job, pod, command, undefined, { stdout: process.stdout, stderr: process.stderr });
  } catch (error) {
    throw new Error(`failed to run script step: ${describeError(error)}`);
  } finally {
    fs.rmSync(script.localPath, { force: true });
  }

  try {
    await copyFromPod(job, pod, `${podWork()}/_temp/_runner_file_commands`, localTemp);
  } catch {
    process.stdout.write('::warning::Failed to copy _temp from pod\n');
  }
}

export async function cleanupJob(job: Job): Promise<void> {
  await Promise.all([prunePods(job), pruneSecrets(job)]);
}
