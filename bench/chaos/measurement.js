'use strict';
// The simulator's columns, measured on the real run: from the apiserver's
// own request log (what reached it, and when its phases changed) and from
// what each hook process reported (its `preflight report:` line).

/** Nearest-rank percentile, as the simulator's (0 when empty). */
function percentile(values, p) {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(Math.max(rank, 1), sorted.length) - 1];
}

const secs = (ms) => `${(ms / 1000).toFixed(1)} s`;

/** The simulator's columns from the real run. */
function measure(o, steps, log, t0) {
  const history = log.phaseHistory || [];
  const refuse = history.find((p) => p.phase === 'refuse');
  const recoveryEntry = refuse ? history.find((p) => p.atMs >= refuse.atMs && p.phase !== 'refuse') : null;
  const forbidden = history.find((p) => p.phase === 'forbidden403');
  const healthyAgain = forbidden ? history.find((p) => p.atMs >= forbidden.atMs && p.phase === 'healthy') : null;
  const recovery = recoveryEntry ? recoveryEntry.atMs : null;

  const reviews = log.requests.filter((r) => r.kind === 'ssar' || r.kind === 'ssrr');
  const fromBin = recovery === null ? Infinity : Math.floor((recovery - t0) / 1000);
  const perSecond = new Map();
  for (const r of reviews) {
    const bin = Math.floor((r.atMs - t0) / 1000);
    if (bin >= fromBin) perSecond.set(bin, (perSecond.get(bin) || 0) + 1);
  }
  const reports = steps.map((s) => s.report).filter(Boolean);
  const checkMs = reports.filter((r) => r.checkStartedAtMs !== null && r.checkEndedAtMs !== null).map((r) => r.checkEndedAtMs - r.checkStartedAtMs);
  const recoveryToVerdict =
    recovery === null
      ? []
      : reports
          .filter((r) => r.requests > 0 && r.checkStartedAtMs !== null && r.checkEndedAtMs !== null && r.checkStartedAtMs < recovery && r.checkEndedAtMs >= recovery)
          .map((r) => r.checkEndedAtMs - recovery);
  const sent = reports.reduce((n, r) => n + r.requests, 0);
  // Request latency as a hook process sees it (connection, TLS, answer): the
  // one-request checks that ran entirely outside the refused and 403 windows.
  const faultFrom = refuse ? refuse.atMs : Infinity;
  const faultTo = healthyAgain ? healthyAgain.atMs : Infinity;
  const latencyMs = reports
    .filter((r) => r.requests === 1 && r.verdict === 'allowed' && r.checkStartedAtMs !== null && r.checkEndedAtMs !== null)
    .filter((r) => r.checkEndedAtMs < faultFrom || r.checkStartedAtMs >= faultTo)
    .map((r) => r.checkEndedAtMs - r.checkStartedAtMs);
  const withStart = steps.filter((s) => s.report && s.report.checkStartedAtMs !== null);
  return {
    policy: `real: ${o.jobs} jobs of Node processes`,
    steps: steps.length,
    stepsFailed: steps.filter((s) => !s.ok).length,
    falseRbac: steps.filter((s) => s.denialLine).length,
    sent,
    unreported: steps.filter((s) => !s.report).length,
    reached: reviews.length,
    other: log.requests.length - reviews.length,
    requestsPerJob: sent / o.jobs,
    peak: Math.max(0, ...perSecond.values()),
    recoveryToVerdict,
    checkMs,
    latencyMs,
    // From when the process was due (its job's schedule) to its check: spawn
    // and Node start-up, plus any lateness of this script's own timers.
    startupMs: withStart.map((s) => s.report.checkStartedAtMs - s.dueAt),
    exitMs: steps.filter((s) => s.report && s.report.checkEndedAtMs !== null).map((s) => s.endedAt - s.report.checkEndedAtMs),
    processMs: steps.map((s) => s.endedAt - s.spawnedAt),
    warnings: steps.reduce((n, s) => n + s.warnings, 0),
    stepsWithWarnings: steps.filter((s) => s.warnings > 0).length,
    inconclusive: steps.filter((s) => s.inconclusiveLine).length,
    timedOut: steps.filter((s) => s.timedOut).length,
    firstFailures: steps.reduce((m, s) => (s.firstFailure ? { ...m, [s.firstFailure]: (m[s.firstFailure] || 0) + 1 } : m), {}),
    bySource: reports.reduce((m, r) => ({ ...m, [`${r.verdict}/${r.source}`]: (m[`${r.verdict}/${r.source}`] || 0) + 1 }), {}),
    byStatus: reviews.reduce((m, r) => ({ ...m, [r.status]: (m[r.status] || 0) + 1 }), {}),
    phases: {
      refuseAt: refuse ? refuse.atMs - t0 : null,
      recoveryAt: recovery === null ? null : recovery - t0,
      healthyAt: healthyAgain ? healthyAgain.atMs - t0 : null,
    },
  };
}

module.exports = { percentile, secs, measure };
