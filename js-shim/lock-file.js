'use strict';
// The lock file that lets one hook process of a job ask the API while the
// others wait for its record, reported as plain facts. What the lock holds,
// whether it is stale, whose it is, how long to wait and when to give up
// are the core's decisions (src/check/turn.rs, src/check/lock_file.rs,
// src/check/single_flight.rs).
//
// - The lock is made whole before it appears: a temp file (O_EXCL, mode
//   0600) with the content the core gives is hard-linked to the lock path,
//   which fails with EEXIST if any lock is there. So a lock is never seen
//   half-written, and a symlink at the path is never followed.

const fs = require('node:fs');
const { readRecord, writeTempFile, unlink, unlinkQuietly } = require('./cache-file');

const codeOf = (e) => e.code || e.message;

/**
 * Creates the lock holding `content`: `{type: 'lockLinked'}`,
 * `{type: 'lockTempFailed', code}` or `{type: 'lockLinkFailed', code,
 * fsNowMs}`, with the temp file's modification time (the file system's
 * clock, which also stamped the lock that is there; null if unreadable).
 */
function createLock(file, content) {
  let temp;
  try {
    temp = writeTempFile(file, content, { sync: false });
  } catch (e) {
    return { type: 'lockTempFailed', code: codeOf(e) };
  }
  try {
    fs.linkSync(temp, file);
    return { type: 'lockLinked' };
  } catch (e) {
    return { type: 'lockLinkFailed', code: codeOf(e), fsNowMs: fileTime(temp) };
  } finally {
    unlinkQuietly(temp);
  }
}

/** `file`'s modification time in epoch ms, or null. */
function fileTime(file) {
  try {
    return fs.lstatSync(file).mtimeMs;
  } catch {
    return null;
  }
}

/**
 * What is at the lock's path: `{type: 'lockStatFailed', code}`, or
 * `{type: 'lockFound', isFile, mtimeMs, content}` with, for a regular
 * file, its first bytes read as a record is (null if that read failed).
 */
function inspectLock(file, limit) {
  let stat;
  try {
    stat = fs.lstatSync(file);
  } catch (e) {
    return { type: 'lockStatFailed', code: codeOf(e) };
  }
  const isFile = stat.isFile();
  let content = null;
  if (isFile) {
    const read = readRecord(file, limit);
    if (read.type === 'recordBytes') content = read.bytes;
  }
  return { type: 'lockFound', isFile, mtimeMs: stat.mtimeMs, content };
}

/** Whether process `pid` exists: `{type: 'process', code}` from kill(pid, 0). */
function probeProcess(pid) {
  try {
    process.kill(pid, 0);
    return { type: 'process', code: null };
  } catch (e) {
    return { type: 'process', code: codeOf(e) };
  }
}

/** Removes `file`: `{type: 'removed', code}`, `code` null when it worked. */
function removeFile(file) {
  return { type: 'removed', code: unlink(file) };
}

module.exports = { createLock, inspectLock, probeProcess, removeFile };
