'use strict';
// The exec command of each pod-side step of a durable exec: `sh -c <step's
// script> k8s-auth-preflight <run id> <stdout offset> <stderr offset> <n>
// <n run ids> [<command>...]`. The scripts are the pod program (pod/*.sh),
// made compact by scripts/build-pod.js; what each step does and what its
// exit statuses mean is written there and in src/durable/pod_status.rs.

const scripts = require('../pkg/pod-program.js');

const RUN_ID = /^[0-9a-f]{32}$/;

function runId(id) {
  if (typeof id !== 'string' || !RUN_ID.test(id)) throw new TypeError(`not a run id: ${JSON.stringify(id)}`);
  return id;
}

/**
 * The exec command of `action` (an `exec` action of the core): `received`
 * holds the bytes of stdout and stderr received so far, `command` is the
 * caller's command (only a start step runs it); the clean-ups are the
 * delivered runs a start removes in passing.
 */
function podCommand(action, received, command) {
  runId(action.run);
  const script = Object.hasOwn(scripts, action.step) ? scripts[action.step] : null;
  if (typeof script !== 'string') throw new TypeError(`not a pod step: ${JSON.stringify(action.step)}`);
  const cleanups = action.step === 'start' && Array.isArray(action.cleanup) ? action.cleanup.map(runId) : [];
  const args = [action.run, String(received.out), String(received.err), String(cleanups.length), ...cleanups];
  return ['sh', '-c', script, 'k8s-auth-preflight', ...args, ...(action.step === 'start' ? command : [])];
}

module.exports = { podCommand };
