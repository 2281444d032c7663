'use strict';
// The whole-job run's table (markdown), one row per job.

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
  '| the stall starts at | stall | job | failed step | its message | API calls (reviews, execs) | script execs | left behind | job took |',
  '| --- | ---: | --- | --- | --- | ---: | --- | --- | ---: |',
];

function row(job) {
  const stall = job.place ? `${Math.round(job.stallMs / 1000)} s` : '-';
  const fired = job.place && !job.stall.fired ? ' (never reached)' : '';
  return `| ${cell(job.place || 'no stall')}${fired} | ${stall} | ${job.ok ? 'ok' : '**failed**'} | ${cell(job.failedStep || '')} | ${cell(job.message ? `\`${shorten(job.message)}\`` : '')} | ${job.apiCalls} (${job.reviewCalls}, ${job.execCalls}) | ${scriptExecCell(job.scriptExecs)} | ${leftCell(job)} | ${(job.ms / 1000).toFixed(1)} s |`;
}

function tableLines(jobs) {
  return [...HEADER, ...jobs.map(row)];
}

/** Rows that break the rule "a job that succeeded ran each script exactly once and left nothing". */
function ruleBreaks(jobs) {
  return jobs.filter((j) => j.ok && (j.scriptExecs.some((c) => c !== 1) || j.leftPods.length > 0 || j.leftSecrets.length > 0));
}

module.exports = { tableLines, ruleBreaks, shorten };
