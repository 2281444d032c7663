// A consumer shaped like the runner container hooks' entry point: one Node
// process per hook command, reading the hook input from stdin, checking the
// service account's permissions before doing anything, and reporting errors
// as workflow commands. Type-checked with tsc and bundled with ncc by
// tests/js/consumer.test.js.

import * as fs from 'node:fs';
import { KubeConfig } from '@kubernetes/client-node';
import {
  configureAuthPreflight,
  isAuthPermissionsOK,
  isPreflightInconclusiveError,
  type AuthPreflight,
  type RequiredPermission,
} from 'k8s-auth-preflight';

type Command = 'prepare_job' | 'cleanup_job' | 'run_container_step' | 'run_script_step';
const COMMANDS: readonly Command[] = ['prepare_job', 'cleanup_job', 'run_container_step', 'run_script_step'];

interface HookInput {
  command: Command;
  responseFile?: string;
  args?: Record<string, unknown>;
  state?: Record<string, unknown>;
}

// What this host needs in its namespace: 13 verb/resource pairs.
const requiredPermissions: RequiredPermission[] = [
  { group: '', resource: 'pods', subresource: '', verbs: ['get', 'list', 'create', 'delete'] },
  { group: '', resource: 'pods', subresource: 'exec', verbs: ['get', 'create'] },
  { group: '', resource: 'pods', subresource: 'log', verbs: ['get', 'list', 'watch'] },
  { group: '', resource: 'secrets', subresource: '', verbs: ['get', 'list', 'create', 'delete'] },
];

function namespaceOf(kc: KubeConfig): string {
  const fromEnv = process.env.ACTIONS_RUNNER_KUBERNETES_NAMESPACE;
  if (fromEnv) return fromEnv;
  const context = kc.getContextObject(kc.getCurrentContext());
  return context?.namespace ?? 'default';
}

const kc = new KubeConfig();
kc.loadFromDefault();
const namespace = namespaceOf(kc);
const preflight: AuthPreflight = configureAuthPreflight({ kubeConfig: kc, namespace, requiredPermissions });

function readStdin(): string {
  return fs.readFileSync(0, 'utf8');
}

function parseInput(text: string): HookInput {
  const value: unknown = JSON.parse(text);
  if (typeof value !== 'object' || value === null) throw new Error('hook input must be a JSON object');
  const command = (value as { command?: unknown }).command;
  if (typeof command !== 'string' || !(COMMANDS as readonly string[]).includes(command)) {
    throw new Error(`unknown hook command ${JSON.stringify(command)}`);
  }
  return value as HookInput;
}

// When the check started and ended (epoch ms), for the report line.
let checkStartedAtMs: number | null = null;
let checkEndedAtMs: number | null = null;

async function run(): Promise<void> {
  const input = parseInput(readStdin());
  checkStartedAtMs = Date.now();
  const ok = await isAuthPermissionsOK().finally(() => {
    checkEndedAtMs = Date.now();
  });
  if (!ok) {
    throw new Error('missing permissions');
  }
  const outcome = preflight.lastOutcome();
  process.stdout.write(`step ok: ${input.command} (source: ${outcome?.source ?? 'none'}, requests: ${outcome?.requests ?? 0})\n`);
}

// One machine-readable line about the check, whatever its end, for tools
// that run many hook processes and add up what they did (bench/chaos.js).
function report(): void {
  const outcome = preflight.lastOutcome();
  const line = {
    verdict: outcome?.verdict ?? null,
    source: outcome?.source ?? null,
    requests: outcome?.requests ?? 0,
    checkStartedAtMs,
    checkEndedAtMs,
  };
  process.stdout.write(`preflight report: ${JSON.stringify(line)}\n`);
}

run().then(
  () => {
    report();
    process.exit(0);
  },
  (error: unknown) => {
    const message = error instanceof Error ? error.message : String(error);
    if (isPreflightInconclusiveError(error)) {
      process.stdout.write(`::error::permission check inconclusive (not a denial): ${message}\n`);
    } else {
      process.stdout.write(`::error::${message}\n`);
    }
    report();
    process.exit(1);
  },
);
