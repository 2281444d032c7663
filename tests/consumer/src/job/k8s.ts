// The Kubernetes calls of a job, shaped like the runner container hooks'
// (one label per runner, a job pod with one container named "job", a secret,
// the phase poll, execs with and without stdin), with the hooks' own waits
// and retries where they have any, and none where they have none:
// - the phase poll backs off 1, 2, 4, 8, 16, then 20 s, and gives up on the
//   first failed read;
// - a copy into or out of the pod is retried up to 30 times, 1 s apart, and
//   then checked with a listing exec, up to 15 times, 1 s apart, whose
//   failures are ignored (the hooks compare hashes of two listings; here the
//   listing only has to run);
// - every other call is made once.
// Written for this repository's tests; no code of the hooks is used.

import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Readable, Writable } from 'node:stream';
import type { V1Pod, V1Secret, V1Status } from '@kubernetes/client-node';
import type { JobClients } from './clients';

export const JOB_CONTAINER = 'job';
export const LABEL_KEY = 'runner-pod';

const COPY_ATTEMPTS = 30;
const COPY_PAUSE_MS = 1000;
const VERIFY_ATTEMPTS = 15;
const VERIFY_PAUSE_MS = 1000;
const POLL_FIRST_S = 1;
const POLL_CAP_S = 20;

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export interface Job {
  clients: JobClients;
  namespace: string;
  runnerName: string;
}

export function labelSelector(job: Job): string {
  return `${LABEL_KEY}=${job.runnerName}`;
}

export function jobPodName(job: Job): string {
  return `${job.runnerName.slice(0, 63 - '-workflow'.length)}-workflow`;
}

/** What an error says, as the hooks format it: the apiserver's message when there is one. */
export function describeError(error: unknown): string {
  const body = (error as { body?: unknown } | null)?.body;
  if (typeof body === 'string') {
    try {
      const parsed = JSON.parse(body) as { message?: unknown; reason?: unknown };
      if (typeof parsed.message === 'string') {
        return typeof parsed.reason === 'string' ? `${parsed.message} (reason: ${parsed.reason})` : parsed.message;
      }
    } catch {
      // not JSON: fall through
    }
  }
  if (error instanceof Error) return error.message;
  try {
    return JSON.stringify(error);
  } catch {
    return String(error);
  }
}

// ---- pods and secrets --------------------------------------------------------

export async function prunePods(job: Job): Promise<void> {
  const list = await job.clients.core.listNamespacedPod({ namespace: job.namespace, labelSelector: labelSelector(job) });
  await Promise.all(
    list.items.map(async (pod) => {
      const name = pod.metadata?.name;
      if (name) await job.clients.core.deleteNamespacedPod({ name, namespace: job.namespace, gracePeriodSeconds: 0 });
    }),
  );
}

export async function pruneSecrets(job: Job): Promise<void> {
  const list = await job.clients.core.listNamespacedSecret({ namespace: job.namespace, labelSelector: labelSelector(job) });
  await Promise.all(
    list.items.map(async (secret) => {
      const name = secret.metadata?.name;
      if (name) await job.clients.core.deleteNamespacedSecret({ name, namespace: job.namespace });
    }),
  );
}

/** An image-pull secret for the job pod, named <runner>-secret-<8 random hex>. */
export async function createPullSecret(job: Job, registry: { server: string; username: string; password: string }): Promise<string> {
  const name = `${job.runnerName.slice(0, 63 - '-secret-'.length - 8)}-secret-${crypto.randomBytes(4).toString('hex')}`;
  const auth = Buffer.from(`${registry.username}:${registry.password}`).toString('base64');
  const config = { auths: { [registry.server]: { username: registry.username, password: registry.password, auth } } };
  const body: V1Secret = {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, labels: { [LABEL_KEY]: job.runnerName } },
    type: 'kubernetes.io/dockerconfigjson',
    immutable: true,
    data: { '.dockerconfigjson': Buffer.from(JSON.stringify(config)).toString('base64') },
  };
  const created = await job.clients.core.createNamespacedSecret({ namespace: job.namespace, body });
  if (!created.metadata?.name) throw new Error('the created secret has no metadata.name');
  return created.metadata.name;
}

export async function createJobPod(job: Job, image: string, pullSecret: string | null): Promise<V1Pod> {
  const body: V1Pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: jobPodName(job), labels: { [LABEL_KEY]: job.runnerName }, annotations: {} },
    spec: {
      restartPolicy: 'Never',
      containers: [{ name: JOB_CONTAINER, image, command: ['tail'], args: ['-f', '/dev/null'] }],
      ...(pullSecret ? { imagePullSecrets: [{ name: pullSecret }] } : {}),
    },
  };
  return job.clients.core.createNamespacedPod({ namespace: job.namespace, body });
}

/** Polls the pod until it is Running; Pending waits; any other phase or a failed read throws. */
export async function waitForPodRunning(job: Job, name: string, timeoutS: number): Promise<void> {
  let waitS = POLL_FIRST_S;
  let waitedS = 0;
  let phase = 'Unknown';
  try {
    for (;;) {
      const pod = await job.clients.core.readNamespacedPod({ name, namespace: job.namespace });
      phase = pod.status?.phase ?? 'Unknown';
      if (phase === 'Running') return;
      if (phase !== 'Pending') throw new Error(`Pod ${name} is unhealthy with phase status ${phase}`);
      await sleep(waitS * 1000);
      waitedS += waitS;
      if (waitedS > timeoutS) throw new Error('backoff timeout');
      waitS = Math.min(waitS * 2, POLL_CAP_S);
    }
  } catch (error) {
    throw new Error(`Pod ${name} is unhealthy with phase status ${phase}: ${describeError(error)}`);
  }
}

// ---- exec ---------------------------------------------------------------------

function collector(): { stream: Writable; text: () => string } {
  const chunks: Buffer[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      chunks.push(Buffer.from(chunk));
      done();
    },
  });
  return { stream, text: () => Buffer.concat(chunks).toString('utf8') };
}

export interface ExecResult {
  stdout: string;
  stderr: string;
}

/** Where an exec's output goes when it is not collected: the hook's own stdout and stderr, as the hooks' script step does. */
export interface ExecSinks {
  stdout: Writable;
  stderr: Writable;
}

/** A failed exec's status as one line: its message, with the exit code from details.causes when the message does not say it. */
function statusMessage(status: V1Status): string {
  const message = status.message || 'exec failed';
  const code = status.details?.causes?.find((c) => c.reason === 'ExitCode')?.message;
  return code && !message.includes(`exit code ${code}`) ? `${message} (exit code ${code})` : message;
}

/**
 * One exec in the job container. Resolves on status Success; rejects with
 * an Error carrying the status message on any other status, with what the
 * exec client rejected with (unchanged: for a failed upgrade, not an Error)
 * when the connection was not made, and with an Error when the stream closed
 * before any status (the hooks would wait for a heartbeat timeout there).
 * With `sinks` the output is written there as it comes (and the result's
 * stdout and stderr are empty); else it is collected.
 */
export async function execInPod(job: Job, pod: string, command: string[], stdin?: Buffer, sinks?: ExecSinks): Promise<ExecResult> {
  const out = collector();
  const err = collector();
  const input = stdin === undefined ? null : Readable.from([stdin]);
  return new Promise<ExecResult>((resolve, reject) => {
    let settled = false;
    const onStatus = (status: V1Status): void => {
      if (settled) return;
      settled = true;
      if (status.status === 'Success') resolve({ stdout: out.text(), stderr: err.text() });
      else reject(new Error(statusMessage(status)));
    };
    job.clients
      .newExec()
      .exec(job.namespace, pod, JOB_CONTAINER, command, sinks ? sinks.stdout : out.stream, sinks ? sinks.stderr : err.stream, input, false, onStatus)
      .then((socket: { on?: (event: string, listener: () => void) => unknown }) => {
        socket.on?.('close', () => {
          // The status callback runs before the socket closes; nothing came.
          setImmediate(() => {
            if (settled) return;
            settled = true;
            reject(new Error(`the exec stream of ${JSON.stringify(command)} closed before its status`));
          });
        });
      })
      .catch((error: unknown) => {
        if (settled) return;
        settled = true;
        reject(error);
      });
  });
}

/**
 * An archive of the folders and files under `dir`, for a copy's stdin: for
 * each, its relative path (a folder's ending in '/'), a newline, its size in
 * bytes, a newline, its bytes and a newline. unpackCommand reads it with sh
 * and head alone.
 */
export function archiveOf(dir: string): Buffer {
  const parts: Buffer[] = [];
  const walk = (folder: string): void => {
    if (!fs.existsSync(folder)) return;
    for (const name of fs.readdirSync(folder).sort()) {
      const full = path.join(folder, name);
      const stat = fs.statSync(full);
      const relative = path.relative(dir, full).split(path.sep).join('/');
      if (stat.isDirectory()) {
        parts.push(Buffer.from(`${relative}/\n0\n\n`));
        walk(full);
      } else if (stat.isFile()) {
        const data = fs.readFileSync(full);
        parts.push(Buffer.from(`${relative}\n${data.length}\n`), data, Buffer.from('\n'));
      }
    }
  };
  walk(dir);
  return Buffer.concat(parts);
}

const shQuote = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`;

/**
 * The command that unpacks archiveOf's format from stdin into `podDir` (made
 * when missing): sh's read for the two header lines, head -c for the bytes
 * (it reads no further than it is asked to from a pipe). It prints each
 * path as it goes, as tar xv does.
 */
export function unpackCommand(podDir: string): string[] {
  const script = [
    `mkdir -p ${shQuote(podDir)} && cd ${shQuote(podDir)} || exit 1`,
    'while IFS= read -r name && IFS= read -r size; do',
    '  printf "%s\\n" "$name"',
    '  case "$name" in',
    '    */) mkdir -p "$name" || exit 1 ;;',
    '    */*) mkdir -p "${name%/*}" && head -c "$size" > "$name" || exit 1 ;;',
    '    *) head -c "$size" > "$name" || exit 1 ;;',
    '  esac',
    '  head -c 1 > /dev/null',
    'done',
  ].join('\n');
  return ['sh', '-c', script];
}

function listingCommand(dir: string): string[] {
  return ['sh', '-c', `ls -lR '${dir}'`];
}

async function verifyListing(job: Job, pod: string, dir: string): Promise<void> {
  for (let i = 0; i < VERIFY_ATTEMPTS; i++) {
    try {
      await execInPod(job, pod, listingCommand(dir));
      return;
    } catch {
      await sleep(VERIFY_PAUSE_MS);
    }
  }
}

async function withCopyRetries(what: string, attempt: () => Promise<unknown>): Promise<void> {
  for (let i = 1; ; i++) {
    try {
      await attempt();
      return;
    } catch (error) {
      if (i >= COPY_ATTEMPTS) throw new Error(`${what} failed after ${i} attempts: ${describeError(error)}`);
      await sleep(COPY_PAUSE_MS);
    }
  }
}

/** Copies the files under `localDir` into `podDir` (an exec with the archive on stdin), then lists them. */
export async function copyToPod(job: Job, pod: string, localDir: string, podDir: string): Promise<void> {
  const command = unpackCommand(podDir);
  await withCopyRetries('cpToPod', () => execInPod(job, pod, command, archiveOf(localDir)));
  await verifyListing(job, pod, podDir);
}

/** Copies `podDir` out of the pod (an exec whose stdout is the archive) into `localParent`, then lists it. */
export async function copyFromPod(job: Job, pod: string, podDir: string, localParent: string): Promise<void> {
  const command = ['tar', 'cf', '-', '-C', path.posix.dirname(podDir), path.posix.basename(podDir)];
  await withCopyRetries('cpFromPod', async () => {
    const { stdout } = await execInPod(job, pod, command);
    fs.mkdirSync(localParent, { recursive: true });
    if (stdout) fs.writeFileSync(path.join(localParent, `${path.posix.basename(podDir)}.from-pod`), stdout);
  });
  await verifyListing(job, pod, podDir);
}
