'use strict';
// Reading and creating the runner key file. Only file mechanics live here:
// where the file is, what a new one holds and whether the one found may be
// trusted are the core's decisions (src/runner_key.rs).
//
// - the read reports what is at the path, as plain facts: lstat's file
//   type, mode and owner (never following a symlink), then, for a regular
//   file, its first bytes through O_NOFOLLOW | O_NONBLOCK (the mode and
//   owner then come from fstat of what was opened); a look that fails
//   reports its code (ENOENT included: what that means is the core's).
// - the creation makes the folder (0700) if it is to be made, writes the
//   text to a fresh temp file (O_EXCL | O_NOFOLLOW, mode 0600, fsynced) and
//   hard-links it to the path, which fails if anything is there: the file
//   is never seen half-written, and of two processes that race, the loser's
//   link fails and its next read finds the winner's key.

const fs = require('node:fs');

const { writeTempFile, unlinkQuietly } = require('./cache-file');

const { O_RDONLY, O_NOFOLLOW, O_NONBLOCK } = fs.constants;

function processUid() {
  return typeof process.getuid === 'function' ? process.getuid() : null;
}

function kindOf(stat) {
  if (stat.isSymbolicLink()) return 'symlink';
  if (stat.isDirectory()) return 'directory';
  if (stat.isFile()) return 'file';
  return 'other';
}

function found(stat, bytes) {
  return {
    type: 'found',
    kind: kindOf(stat),
    mode: stat.mode & 0o7777,
    uid: stat.uid,
    bytes,
    processUid: processUid(),
  };
}

/**
 * What is at `file`: `{type: 'failed', code}` or `{type: 'found', kind,
 * mode, uid, bytes}`, each with `processUid`. At most `limit + 1` bytes
 * are read.
 */
function readKeyFile(file, limit) {
  let stat;
  try {
    stat = fs.lstatSync(file);
  } catch (e) {
    return { type: 'failed', code: e.code || e.message, processUid: processUid() };
  }
  if (!stat.isFile()) return found(stat, null);
  let fd;
  try {
    fd = fs.openSync(file, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
  } catch (e) {
    return { type: 'failed', code: e.code || e.message, processUid: processUid() };
  }
  try {
    const opened = fs.fstatSync(fd);
    if (!opened.isFile()) return found(opened, null);
    const buffer = Buffer.alloc(limit + 1);
    let length = 0;
    while (length < buffer.length) {
      const n = fs.readSync(fd, buffer, length, buffer.length - length, null);
      if (n === 0) break;
      length += n;
    }
    return found(opened, buffer.subarray(0, length));
  } catch (e) {
    return { type: 'failed', code: e.code || e.message, processUid: processUid() };
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * Creates the key file `at.file` holding `text` (and the folder `at.folder`
 * first, when given). Returns null, or the error code of the step that
 * failed (EEXIST when another process linked its file first).
 */
function createKeyFile(at, text) {
  if (at.folder) {
    try {
      fs.mkdirSync(at.folder, { mode: 0o700 });
    } catch (e) {
      if (e.code !== 'EEXIST') return e.code || e.message;
    }
  }
  let temp = null;
  try {
    temp = writeTempFile(at.file, text, { sync: true });
    fs.linkSync(temp, at.file);
    return null;
  } catch (e) {
    return e.code || e.message;
  } finally {
    if (temp) unlinkQuietly(temp);
  }
}

module.exports = { readKeyFile, createKeyFile };
