'use strict';
// The whole-job run's tables (markdown): one row per job, and a summary per
// client mode and stall length.

const MESSAGE_CHARS = 110;

const cell = (text) => String(text).replace(/\|/g, '\\|').replace(/\n/g, ' ');

// The loopback URL says nothing the row does not: keep the path, drop the
// host and port (they change every run) and the query.
function plain(text) {
  return String(text)
    .replace(/https:\/\/127\.0\.0\.1:\d+(\/[^?\s]*)(\?\S*)?/g, '$1')
    .replace(/127\.0\.0\.1:\d+/g, 'the apiserver');
}

function shorten(text, chars = MESSAGE_CHARS) {
  const s = plain(text);
  return s.length > chars ? `${s.slice(0, chars - 1)}…` : s;
}

/** `1, 1, 1` / `1, -, -` (- : the step never reached its script). */
function scriptExecCell(counts) {
  return counts.map((c) => (c === null ? '-' : String(c))).join(', ');
}

function leftCell(job) {
  if (job.leftPods.length === 0 && job.leftSecrets.length === 0) return 'nothing';
  const parts = [];
  if (job.leftPods.length) parts.push(`${job.leftPods.length} pod${job.leftPods.length > 1 ? 's' : ''}`);
  if (job.leftSecrets.length) parts.push(`${job.leftSecrets.length} secret${job.leftSecrets.length > 1 ? 's' : ''}`);
  return parts.join(', ');
}

const HEADER = [
  '| clients | the stall starts at | stall | job | failed step | its message | API calls (reviews, execs) | script execs | left behind | job took |',
  '| --- | --- | ---: | --- | --- | --- | ---: | --- | --- | ---: |',
];

const stallCell = (stallMs) => (stallMs ? `${Math.round(stallMs / 1000)} s` : '-');

function row(job) {
  const fired = job.place && !job.stall.fired ? ' (never reached)' : '';
  return `| ${cell(job.mode || 'plain')} | ${cell(job.place || 'no stall')}${fired} | ${stallCell(job.stallMs)} | ${job.ok ? 'ok' : '**failed**'} | ${cell(job.failedStep || '')} | ${cell(job.message ? `\`${shorten(job.message)}\`` : '')} | ${job.apiCalls} (${job.reviewCalls}, ${job.execCalls}) | ${scriptExecCell(job.scriptExecs)} | ${leftCell(job)} | ${(job.ms / 1000).toFixed(1)} s |`;
}

/** A planned job that was not run: { mode, place, stallMs, why }. */
function skippedRow(s) {
  return `| ${cell(s.mode)} | ${cell(s.place || 'no stall')} | ${stallCell(s.stallMs)} | not run | | ${cell(shorten(s.why))} | | | | |`;
}

function tableLines(jobs, skipped = []) {
  return [...HEADER, ...jobs.map(row), ...skipped.map(skippedRow)];
}

function median(values) {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/**
 * One row per (client mode, stall length) in the order given: the jobs
 * that failed of those run, the median API calls per job, the places of the
 * failed jobs, and what was planned but not run.
 */
function summaryLines(modes, stallsMs, jobs, skipped = []) {
  const lines = [
    '| clients | stall | jobs failed | median API calls per job | failed at | not run |',
    '| --- | ---: | ---: | ---: | --- | ---: |',
  ];
  for (const mode of modes) {
    for (const stallMs of [0, ...stallsMs]) {
      const mine = jobs.filter((j) => (j.mode || 'plain') === mode && j.stallMs === stallMs);
      const notRun = skipped.filter((s) => s.mode === mode && s.stallMs === stallMs).length;
      if (mine.length === 0 && notRun === 0) continue;
      const failed = mine.filter((j) => !j.ok);
      const m = median(mine.map((j) => j.apiCalls));
      const where = failed.map((j) => j.place || 'no stall').join(', ');
      lines.push(`| ${cell(mode)} | ${stallMs ? `${Math.round(stallMs / 1000)} s` : 'none'} | ${failed.length} of ${mine.length} | ${m === null ? '-' : m} | ${cell(where || '-')} | ${notRun || ''} |`);
    }
  }
  return lines;
}

/** Rows that break the rule "a job that succeeded ran each script exactly once and left nothing". */
function ruleBreaks(jobs) {
  return jobs.filter((j) => j.ok && (j.scriptExecs.some((c) => c !== 1) || j.leftPods.length > 0 || j.leftSecrets.length > 0));
}

module.exports = { tableLines, summaryLines, ruleBreaks, shorten, median };
