'use strict';
// Whole jobs through the hooks' real bundles (tests/hooks/build.js) with a
// 25 s refused stall of the apiserver (its listener closed and every open
// connection destroyed: the kernel refuses new ones) that starts at one
// place of the job at a time: before a hook process starts, or as the
// first request of a kind arrives (before it is answered, so that request
// is cut). The integrated hooks ride through each with the package's
// default settings: every hook does its work, each script starts once, one
// job pod and one step pod are made and none is left. The plain bundle is
// the control: the same stall at the pod create fails its prepare_job.
//
//   node tests/hooks/build.js && node --test tests/hooks/stalls.test.js
//
// Needs root, ip and iptables (the namespaces), and the hooks' source beside
// the clone (skipped with one line that says so; under CI=true its absence
// fails).

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { describe, test } = require('node:test');

const { RELEASES, skipWithoutUpstream } = require('./upstream');
const { bundleOf } = require('./build');
const { cluster } = require('./cluster');
const { makeRunner, inputs, runHook, withoutCommands, podVolume, describeHook } = require('./job');

const SKIP = skipWithoutUpstream();
const CONCURRENCY = 4;
const STALL_MS = 25_000;
const HOOK_TIMEOUT_MS = 200_000;
const TEST_TIMEOUT_MS = 400_000;

// Where the stall starts: `before` a hook of the job, or at the first
// request on `route` (the apiserver's name for it).
const PLACES = {
  'before prepare_job': { before: 'prepare' },
  'at the pod create': { route: 'create pods' },
  'at the phase polling': { route: 'get pods' },
  'at the first exec set-up': { route: 'exec pods' },
  'between the script steps': { before: 'two' },
  'before the container step': { before: 'container' },
  'before cleanup_job': { before: 'cleanup' },
};

const stepBody = (tag) => `echo "start ${tag}" >> /__w/starts\necho "${tag} says hello"\n`;

/**
 * One job through `bundle` with the stall at `place` (a key of PLACES):
 * prepare_job, two script steps, a container step, cleanup_job; a hook that
 * fails ends the job (cleanup_job still runs). Resolves what the tests read.
 */
async function stalledJob(c, bundle, place) {
  const spec = PLACES[place];
  const runner = makeRunner({ files: { 'README.md': 'the checkout\n' } });
  try {
    if (spec.route) await c.server.call('stall', { ms: STALL_MS, route: spec.route });
    const hook = async (label, command, args, state) => {
      if (spec.before === label) await c.server.call('stall', { ms: STALL_MS });
      return runHook({ spawn: c.ns.spawn, bundle, runner, kubeconfig: c.server.kubeconfig, command, args, state, timeoutMs: HOOK_TIMEOUT_MS });
    };
    const j = { place, hooks: {} };
    const steps = [
      ['prepare', 'prepare_job', () => inputs.prepareJob({ services: false })],
      ['one', 'run_script_step', () => inputs.runScriptStep(runner.writeStepScript(stepBody('one')))],
      ['two', 'run_script_step', () => inputs.runScriptStep(runner.writeStepScript(stepBody('two')))],
      ['container', 'run_container_step', () => inputs.runContainerStep('echo "in the step pod"; cat README.md')],
    ];
    let state = null;
    for (const [label, command, args] of steps) {
      const r = await hook(label, command, args(), state || {});
      j.hooks[label] = r;
      if (label === 'prepare') state = r.response && r.response.state;
      if (r.code !== 0 || !state) break;
    }
    j.hooks.cleanup = await hook('cleanup', 'cleanup_job', {}, state || {});
    await c.server.call('disarm');
    const starts = path.join(podVolume(c.podRoot, runner.jobPod, '/__w'), 'starts');
    j.starts = fs.existsSync(starts) ? fs.readFileSync(starts, 'utf8') : '';
    j.stalled = (await c.server.call('phases')).some((p) => p.phase === 'refuse');
    const requests = await c.server.call('requests');
    j.podsMade = requests.filter((r) => r.route === 'create pods' && r.status === 201).length;
    j.podsLeft = (await c.server.call('objects', { resource: 'pods' })).filter((p) => p.includes(runner.name));
    j.describe = () => [`${place}:`, ...Object.entries(j.hooks).map(([label, r]) => describeHook(label, r)), `starts: ${JSON.stringify(j.starts)}`].join('\n');
    return j;
  } finally {
    runner.remove();
  }
}

describe("whole jobs through a 25 s refused stall, the hooks' real bundles", { skip: SKIP, concurrency: CONCURRENCY }, () => {
  for (const release of RELEASES) {
    for (const place of Object.keys(PLACES)) {
      test(`${release.name}, integrated: the stall ${place}: every hook does its work, each script starts once, no pod made twice or left`, { timeout: TEST_TIMEOUT_MS }, async (t) => {
        const c = await cluster(t);
        const j = await stalledJob(c, bundleOf(release, 'integrated'), place);
        t.diagnostic(`${place}: ${Object.entries(j.hooks).map(([label, r]) => `${label} ${Math.round(r.ms)} ms`).join(', ')}`);
        const why = `\n${j.describe()}`;
        assert.ok(j.stalled, `the stall never started${why}`);
        for (const [label, r] of Object.entries(j.hooks)) assert.equal(r.code, 0, `${label}${why}`);
        assert.deepEqual(Object.keys(j.hooks), ['prepare', 'one', 'two', 'container', 'cleanup'], why);
        assert.match(withoutCommands(j.hooks.one.stdout), /^one says hello\n/, `the first script's output${why}`);
        assert.match(withoutCommands(j.hooks.two.stdout), /^two says hello\n/, `the second script's output${why}`);
        assert.match(j.hooks.container.stdout, /in the step pod\nthe checkout\n/, `the container step ran with the workspace${why}`);
        assert.equal(j.starts, 'start one\nstart two\n', `each script started once${why}`);
        assert.equal(j.podsMade, 2, `one job pod and one step pod made${why}`);
        assert.deepEqual(j.podsLeft, [], `pods left${why}`);
      });
    }

    test(`${release.name}, plain (the control): the stall at the pod create fails prepare_job`, { timeout: TEST_TIMEOUT_MS }, async (t) => {
      const c = await cluster(t);
      const j = await stalledJob(c, bundleOf(release, 'plain'), 'at the pod create');
      assert.ok(j.stalled, `the stall never started\n${j.describe()}`);
      assert.notEqual(j.hooks.prepare.code, 0, `the plain hooks rode through a stall they have no retry for\n${j.describe()}`);
      assert.deepEqual(Object.keys(j.hooks), ['prepare', 'cleanup'], j.describe());
    });
  }
});
