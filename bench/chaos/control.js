'use strict';
// How a chaos run stops: on a bad argument or a failed step (die), on any
// exit (every child killed, the run folder removed), and at the wall-clock
// limit (every hook process killed, every sleeper woken, so the jobs end).

const fs = require('node:fs');

function die(message) {
  process.stderr.write(`chaos: ${message}\n`);
  process.exit(2);
}

/**
 * The run's shared state: `children` (every child process running, killed
 * on any exit), `sleepers` (woken when the run is stopped), `stopped`, and
 * `work` (the run folder, removed on exit unless cleared).
 */
function createRunControl() {
  const control = { stopped: false, children: new Set(), sleepers: new Set(), work: null };
  process.on('exit', () => {
    for (const child of control.children) child.kill('SIGKILL');
    if (control.work) fs.rmSync(control.work, { recursive: true, force: true });
  });
  for (const signal of ['SIGINT', 'SIGTERM']) {
    process.on(signal, () => {
      for (const child of control.children) child.kill('SIGKILL');
      process.exit(130);
    });
  }
  return control;
}

/** Sleeps `ms`, or less when the run is stopped (the watchdog wakes every sleeper). */
function sleep(control, ms) {
  if (control.stopped) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      control.sleepers.delete(done);
      resolve();
    };
    const timer = setTimeout(done, Math.max(0, ms));
    control.sleepers.add(done);
  });
}

/**
 * Stops the run after `limitS` seconds: kills every child but `spare` (the
 * apiserver, stopped in order later) and wakes every sleeper; `onStop` is
 * told. If stopping itself hangs, exits 30 s later anyway. Returns a
 * function that cancels the limit (the last resort stays, unref'd).
 */
function startWallClockLimit(control, limitS, spare, onStop) {
  const watchdog = setTimeout(() => {
    control.stopped = true;
    onStop();
    process.stderr.write(`chaos: the wall-clock limit of ${limitS} s was reached; stopping every hook process\n`);
    for (const child of control.children) if (child !== spare) child.kill('SIGKILL');
    for (const wake of [...control.sleepers]) wake();
  }, limitS * 1000);
  // Last resort: if stopping itself hangs, exit anyway.
  const hardStop = setTimeout(() => {
    process.stderr.write('chaos: could not stop cleanly; exiting\n');
    process.exit(3);
  }, limitS * 1000 + 30_000);
  hardStop.unref();
  return () => clearTimeout(watchdog);
}

module.exports = { die, createRunControl, sleep, startWallClockLimit };
