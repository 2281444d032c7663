'use strict';
// Whole jobs through the hooks' real bundles (tests/hooks/build.js: each
// release built from its source, plain and with the documented
// integration), driven as the runner drives them (tests/hooks/job.js),
// against the loopback apiserver in a network namespace of each test's own:
// prepare_job with a job container and a service container, script steps
// (output, exit codes, file commands copied back), a container step, and
// cleanup_job. The plain bundle is the reference: whatever it gives a
// healthy job, the integrated one gives too. The faults the integration
// exists for are in durable.test.js and stalls.test.js.
//
//   node tests/hooks/build.js && node --test --test-concurrency=1 tests/hooks/
//
// Without ../shared/upstream beside the clone the tests skip with one line
// that says so; with it, CI must build and run them. Needs root, ip and
// iptables (tests/support/netns.js).

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { describe, test } = require('node:test');

const { RELEASES, skipWithoutUpstream } = require('./upstream');
const { bundleOf } = require('./build');
const { makeRunner, inputs, runHook, withoutCommands, withoutNodeWarnings, podVolume, describeHook } = require('./job');
const { cluster } = require('./cluster');

const SKIP = skipWithoutUpstream();
const HOOK_TIMEOUT_MS = 120_000;
const TEST_TIMEOUT_MS = 300_000;


// What a job's script steps do: print known lines to stdout and stderr,
// count their starts in the workspace, and write the runner's file commands.
const STEP_LINES = 200;
const stepBody = (tag, code) =>
  [
    `echo "start ${tag}" >> /__w/starts`,
    `i=0; while [ "$i" -lt ${STEP_LINES} ]; do echo "${tag} out $i"; echo "${tag} err $i" >&2; i=$((i + 1)); done`,
    `echo "FROM_${tag}=yes" >> "$GITHUB_ENV"`,
    `echo "answer=${tag}" >> "$GITHUB_OUTPUT"`,
    `exit ${code}`,
    '',
  ].join('\n');
const stepOut = (tag) => Array.from({ length: STEP_LINES }, (_, i) => `${tag} out ${i}\n`).join('');
const stepErr = (tag) => Array.from({ length: STEP_LINES }, (_, i) => `${tag} err ${i}\n`).join('');

/** The step's file commands, as the runner names them in the step's environment. */
function fileCommands(tag) {
  return {
    GITHUB_ENV: `/__w/_temp/_runner_file_commands/set_env_${tag}`,
    GITHUB_OUTPUT: `/__w/_temp/_runner_file_commands/set_output_${tag}`,
  };
}

/**
 * One whole job through `bundle`: prepare_job, two script steps (exit 0,
 * then `failCode`), a container step, cleanup_job. Resolves what a test
 * compares: each hook's exit code, the scripts' output, the file commands
 * back on the runner, the starts counted in the pod, the pods left.
 */
async function wholeJob({ ns, server, podRoot }, bundle, { failCode = 3 } = {}) {
  const runner = makeRunner({ files: { 'README.md': 'the checkout\n', 'src/a b.txt': 'a name with a space\n' } });
  try {
    const hook = (label, command, args, state) => runHook({ spawn: ns.spawn, bundle, runner, kubeconfig: server.kubeconfig, command, args, state, timeoutMs: HOOK_TIMEOUT_MS });
    const result = { runner: runner.name, hooks: {} };
    const prepare = await hook('prepare', 'prepare_job', inputs.prepareJob());
    result.hooks.prepare = prepare;
    const state = prepare.response && prepare.response.state;
    result.response = prepare.response;
    result.checkout = fs.readFileSync(path.join(podVolume(podRoot, runner.jobPod, '/__w'), 'repo', 'repo', 'src', 'a b.txt'), 'utf8');
    for (const [tag, code] of [
      ['one', 0],
      ['two', failCode],
    ]) {
      const script = runner.writeStepScript(stepBody(tag, code));
      const r = await hook(tag, 'run_script_step', inputs.runScriptStep(script, fileCommands(tag)), state);
      const commands = path.join(runner.temp, '_runner_file_commands');
      result.hooks[tag] = r;
      result[tag] = {
        code: r.code,
        stdout: withoutCommands(r.stdout),
        stderr: withoutNodeWarnings(r.stderr),
        env: readIfThere(path.join(commands, `set_env_${tag}`)),
        output: readIfThere(path.join(commands, `set_output_${tag}`)),
      };
    }
    const container = await hook('container', 'run_container_step', inputs.runContainerStep('echo "in the step pod"; cat README.md; exit 5'), state);
    result.hooks.container = container;
    result.container = { code: container.code, stdout: withoutCommands(container.stdout).split('\n').filter((l) => !l.startsWith('##[')).join('\n') };
    const cleanup = await hook('cleanup', 'cleanup_job', {}, state);
    result.hooks.cleanup = cleanup;
    result.starts = readIfThere(path.join(podVolume(podRoot, runner.jobPod, '/__w'), 'starts'));
    result.pods = await server.call('objects', { resource: 'pods' });
    result.describe = () => Object.entries(result.hooks).map(([label, r]) => describeHook(label, r)).join('\n');
    return result;
  } finally {
    runner.remove();
  }
}

function readIfThere(file) {
  return fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : null;
}

/** Asserts the healthy job's results: each rule of a hook the runner relies on. */
function assertHealthyJob(j, failCode) {
  const why = `\n${j.describe()}`;
  assert.equal(j.hooks.prepare.code, 0, `prepare_job${why}`);
  assert.equal(j.response.state.jobPod, `${j.runner}-workflow`, `prepare_job's state names the job pod${why}`);
  assert.deepEqual((j.response.context.services || []).map((c) => c.image), ['redis:7'], `prepare_job's response has the service container${why}`);
  assert.equal(j.response.context.container.image, 'debian:bookworm', `prepare_job's response has the job container${why}`);
  assert.equal(j.checkout, 'a name with a space\n', 'the checkout was copied into the job pod');
  assert.equal(j.one.code, 0, `the script step that exits 0${why}`);
  assert.equal(j.one.stdout, stepOut('one'), `the script's stdout, whole and in order${why}`);
  assert.equal(j.one.stderr, stepErr('one'), `the script's stderr${why}`);
  assert.equal(j.one.env, 'FROM_one=yes\n', `GITHUB_ENV was copied back to the runner${why}`);
  assert.equal(j.one.output, 'answer=one\n', `GITHUB_OUTPUT was copied back to the runner${why}`);
  assert.notEqual(j.two.code, 0, `the script that exits ${failCode} fails its step${why}`);
  assert.equal(j.two.stdout.slice(0, stepOut('two').length), stepOut('two'), `the failing script's stdout${why}`);
  assert.equal(j.starts, 'start one\nstart two\n', `each script started once${why}`);
  assert.notEqual(j.container.code, 0, `the container step's exit 5 fails it${why}`);
  assert.match(j.container.stdout, /in the step pod\nthe checkout\n/, `the container step ran in its pod with the workspace${why}`);
  assert.equal(j.hooks.cleanup.code, 0, `cleanup_job${why}`);
  assert.deepEqual(
    j.pods.filter((p) => p.includes(j.runner)),
    [],
    `cleanup_job deleted the runner's pods${why}`,
  );
}

for (const release of RELEASES) {
  describe(`the hooks' real bundle, ${release.name}`, { skip: SKIP }, () => {
    test(`${release.name}: a healthy whole job gives the same results plain and integrated (job and service container, script steps, file commands, a container step, cleanup)`, { timeout: TEST_TIMEOUT_MS }, async (t) => {
      const c = await cluster(t);
      const plain = await wholeJob(c, bundleOf(release, 'plain'));
      assertHealthyJob(plain, 3);
      const integrated = await wholeJob(c, bundleOf(release, 'integrated'));
      assertHealthyJob(integrated, 3);
      for (const key of ['one', 'two', 'container']) {
        assert.deepEqual({ ...integrated[key] }, { ...plain[key] }, `${key}: the integrated hooks give what the plain hooks give\n${integrated.describe()}`);
      }
    });

  });
}
