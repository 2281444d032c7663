'use strict';
// The fleet plan: when each job starts and how long each step's work takes
// (seeded, reproducible per --seed). The real run follows it, and the
// simulator gets it through --plan, with each step's measured start-up and
// exit, so both run the very same fleet schedule.

/** SplitMix64, seeded: the fleet plan's randomness (reproducible per --seed). */
function seededRandom(seed) {
  const MASK = (1n << 64n) - 1n;
  let state = BigInt(seed) & MASK;
  const next = () => {
    state = (state + 0x9e3779b97f4a7c15n) & MASK;
    let z = state;
    z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & MASK;
    z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & MASK;
    return z ^ (z >> 31n);
  };
  /** A whole number in [low, high]. */
  return (low, high) => low + Number(next() % BigInt(high - low + 1));
}

/** Per job: its start (ms after t = 0) and the work gap after each step but the last. */
function makePlan(o) {
  const random = seededRandom(o.seed);
  const jobs = [];
  for (let j = 0; j < o.jobs; j++) {
    const startMs = random(0, o.startSpreadMs);
    const gapsMs = [];
    for (let k = 0; k < o.scriptSteps + 1; k++) gapsMs.push(random(o.stepWorkMs[0], o.stepWorkMs[1]));
    jobs.push({ startMs, gapsMs });
  }
  return jobs;
}

/**
 * The plan as the simulator takes it, with each step's measured start-up
 * (from when it was due to its check) and exit (verdict to process end);
 * steps the real run did not get to take the medians.
 */
function calibratedPlan(plan, steps, o, startupMs, exitMs) {
  const jobs = plan.map((job) => ({
    ...job,
    startupsMs: Array(o.scriptSteps + 2).fill(startupMs),
    exitsMs: Array(o.scriptSteps + 2).fill(exitMs),
  }));
  for (const s of steps) {
    if (!s.report || s.report.checkStartedAtMs === null || s.report.checkEndedAtMs === null) continue;
    jobs[s.job].startupsMs[s.step] = Math.max(0, s.report.checkStartedAtMs - s.dueAt);
    jobs[s.job].exitsMs[s.step] = Math.max(0, s.endedAt - s.report.checkEndedAtMs);
  }
  return jobs;
}

module.exports = { makePlan, calibratedPlan };
