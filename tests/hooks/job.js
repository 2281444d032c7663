'use strict';
// Drives the hooks' real bundle (tests/hooks/build.js) as the runner drives
// it: one fresh `node index.js` per hook, the hook's JSON on stdin, a
// response file, a clean environment (PATH, HOME, KUBECONFIG and the
// runner's variables), and the runner's folders on disk:
//
//   <base>/_work/repo/repo      GITHUB_WORKSPACE (the checkout)
//   <base>/_work/_temp          RUNNER_TEMP, with _github_home,
//                               _github_workflow, _runner_file_commands
//
// The apiserver is the loopback one (netns-job-server.js in a network
// namespace of the caller's), with `podMounts` so that /__w, /__e and
// /github in each pod's execs are that pod's own folders, as a pod's
// volumes are.

const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const NAMESPACE = 'ci';
const POD_MOUNTS = ['/__w', '/__e', '/github'];
const RUNNER_WORK_ROOT = '/__w';

/** A runner's folders for one job; `files` ({ relative path: content }) go into the checkout. */
function makeRunner({ files = {}, tempFiles = {} } = {}) {
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'real-hooks-runner-'));
  const work = path.join(base, '_work');
  const workspace = path.join(work, 'repo', 'repo');
  const temp = path.join(work, '_temp');
  for (const dir of [workspace, path.join(temp, '_github_home'), path.join(temp, '_github_workflow'), path.join(temp, '_runner_file_commands'), path.join(base, 'home')]) {
    fs.mkdirSync(dir, { recursive: true });
  }
  const put = (root, rel, content) => {
    const file = path.join(root, rel);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, content);
  };
  for (const [rel, content] of Object.entries(files)) put(workspace, rel, content);
  for (const [rel, content] of Object.entries(tempFiles)) put(temp, rel, content);
  const name = `runner-${crypto.randomBytes(3).toString('hex')}`;
  return {
    name,
    base,
    work,
    workspace,
    temp,
    jobPod: `${name}-workflow`,
    env: (kubeconfig, extra = {}) => ({
      PATH: process.env.PATH,
      HOME: path.join(base, 'home'),
      KUBECONFIG: kubeconfig,
      RUNNER_WORKSPACE: path.join(work, 'repo'),
      RUNNER_TEMP: temp,
      GITHUB_WORKSPACE: workspace,
      ACTIONS_RUNNER_POD_NAME: name,
      ACTIONS_RUNNER_KUBERNETES_NAMESPACE: NAMESPACE,
      ...extra,
    }),
    /** A step script, as the runner writes one into _temp before the hook runs; returns its path in the pod. */
    writeStepScript: (body) => {
      const file = `${crypto.randomUUID()}.sh`;
      fs.writeFileSync(path.join(temp, file), body);
      return `${RUNNER_WORK_ROOT}/_temp/${file}`;
    },
    remove: () => fs.rmSync(base, { recursive: true, force: true }),
  };
}

/** The hook inputs the runner sends. */
const inputs = {
  prepareJob: ({ services = true } = {}) => ({
    container: {
      image: 'debian:bookworm',
      workingDirectory: `${RUNNER_WORK_ROOT}/repo/repo`,
      systemMountVolumes: [],
      userMountVolumes: [],
      environmentVariables: {},
      portMappings: [],
    },
    services: services ? [{ contextName: 'redis', image: 'redis:7', environmentVariables: {}, portMappings: [], userMountVolumes: [], systemMountVolumes: [] }] : [],
  }),
  runScriptStep: (scriptPath, environmentVariables = {}) => ({
    entryPoint: 'sh',
    entryPointArgs: ['-e', scriptPath],
    environmentVariables,
    prependPath: [],
    workingDirectory: `${RUNNER_WORK_ROOT}/repo/repo`,
  }),
  runContainerStep: (script, environmentVariables = {}) => ({
    image: 'alpine:3',
    entryPoint: 'sh',
    entryPointArgs: ['-c', `'${script.replace(/'/g, `'\\''`)}'`],
    environmentVariables,
    workingDirectory: `${RUNNER_WORK_ROOT}/repo/repo`,
    systemMountVolumes: [],
    userMountVolumes: [],
  }),
};

/**
 * Runs one hook: `spawn(command, args, { cwd, env })` (a netns handle's
 * spawn) starts `node index.js` in `bundle`. Resolves { code, signal,
 * stdout, stderr, timedOut, ms, response (the response file's JSON, or
 * null), proc }.
 */
function runHook({ spawn, node = process.execPath, bundle, runner, kubeconfig, command, args = {}, state = {}, env = {}, timeoutMs, onStart }) {
  const responseFile = path.join(runner.temp, '_runner_hook_responses', `${command}-${crypto.randomBytes(3).toString('hex')}.json`);
  fs.mkdirSync(path.dirname(responseFile), { recursive: true });
  // The runner makes the file; the hooks write into it and refuse one that is missing.
  fs.writeFileSync(responseFile, '');
  const startedAt = performance.now();
  const proc = spawn(node, ['index.js'], { cwd: bundle, env: runner.env(kubeconfig, env) });
  const out = [];
  const err = [];
  proc.child.stdout.on('data', (d) => out.push(Buffer.from(d)));
  proc.child.stderr.on('data', (d) => err.push(Buffer.from(d)));
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    proc.kill('SIGKILL');
  }, timeoutMs);
  proc.child.stdin.end(JSON.stringify({ command, responseFile, args, state }));
  if (onStart) onStart(proc);
  return proc.exited.then(({ code, signal }) => {
    clearTimeout(timer);
    const text = fs.existsSync(responseFile) ? fs.readFileSync(responseFile, 'utf8') : '';
    const response = text ? JSON.parse(text) : null;
    return { code, signal, stdout: Buffer.concat(out).toString('latin1'), stderr: Buffer.concat(err).toString('latin1'), timedOut, ms: performance.now() - startedAt, response, proc };
  });
}

/** The hooks' stdout without the workflow-command lines (::debug::, ::warning::, ...) and our package's lines. */
function withoutCommands(text) {
  return text
    .replace(/^::[a-z-]+[^\n]*::[^\n]*\n/gm, '')
    .replace(/^reattached to the script in pod [^\n]*\n/gm, '')
    .replace(/^The Kubernetes API answered [^\n]*\n/gm, '');
}

/** stderr without Node's own warnings about the hooks' dependencies (Buffer() in one of them). */
function withoutNodeWarnings(text) {
  return text.replace(/^\(node:\d+\) [^\n]*\n/gm, '').replace(/^\(Use `node --trace-[^\n]*\n/gm, '');
}

/** A pod's own folder for a volume (`/__w`) under the server's podRoot. */
function podVolume(podRoot, pod, mount) {
  return path.join(podRoot, encodeURIComponent(NAMESPACE), encodeURIComponent(pod), 'volumes', mount.slice(1));
}

/** A short account of one hook run for assertion messages. */
function describeHook(label, r) {
  const tail = (t) => t.split('\n').slice(-15).join('\n    ');
  return `${label}: exit ${r.code}${r.signal ? ` ${r.signal}` : ''}${r.timedOut ? ' (timed out)' : ''}, ${Math.round(r.ms)} ms\n  stdout:\n    ${tail(r.stdout)}\n  stderr:\n    ${tail(r.stderr)}`;
}

module.exports = { NAMESPACE, POD_MOUNTS, makeRunner, inputs, runHook, withoutCommands, withoutNodeWarnings, podVolume, describeHook };
