'use strict';
// Reading, writing and deleting the cache record file. Only file mechanics
// live here: whether a record is usable is the core's decision.
//
// The folder ($RUNNER_TEMP) is on the work volume that job containers mount,
// so the file may be anything: a symlink, a FIFO, a directory, 100 MB of junk.
// - reads open with O_NOFOLLOW | O_NONBLOCK, check that it is a regular file,
//   and read at most `limit` bytes; anything odd is a miss with a warning.
// - writes go to a fresh temp file (O_EXCL | O_NOFOLLOW, mode 0600) in the
//   same folder, then rename() over the path: atomic, and a symlink at the
//   path is replaced, never followed.

const fs = require('node:fs');
const path = require('node:path');

const { O_RDONLY, O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW, O_NONBLOCK } = fs.constants;

/** Returns { bytes: Buffer|null, warning: string|null }. */
function readRecord(file, limit) {
  let fd;
  try {
    fd = fs.openSync(file, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
  } catch (e) {
    if (e.code === 'ENOENT' || e.code === 'ENOTDIR') return { bytes: null, warning: null };
    if (e.code === 'ELOOP' || e.code === 'EMLINK') {
      return { bytes: null, warning: `cache path ${file} is a symbolic link; ignoring it` };
    }
    return { bytes: null, warning: `cannot open cache file ${file}: ${e.code || e.message}` };
  }
  try {
    const stat = fs.fstatSync(fd);
    if (!stat.isFile()) {
      return { bytes: null, warning: `cache path ${file} is not a regular file; ignoring it` };
    }
    const buffer = Buffer.alloc(limit + 1);
    let length = 0;
    while (length < buffer.length) {
      const n = fs.readSync(fd, buffer, length, buffer.length - length, null);
      if (n === 0) break;
      length += n;
    }
    return { bytes: buffer.subarray(0, length), warning: null };
  } catch (e) {
    return { bytes: null, warning: `cannot read cache file ${file}: ${e.code || e.message}` };
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * Writes `text` to a fresh temp file next to `file` (O_EXCL | O_NOFOLLOW,
 * mode 0600; fsynced when `sync`) and returns its path. On failure it
 * throws and leaves nothing behind. The record (renamed over its path) and
 * the lock file (hard-linked to its path) are both made this way.
 */
function writeTempFile(file, text, { sync }) {
  // Required here, not at the top: loading node:crypto costs about 3 ms,
  // and only a step that asks the API writes (a cached verdict never does).
  const crypto = require('node:crypto');
  const temp = path.join(
    path.dirname(file),
    `.${path.basename(file)}.${process.pid}.${crypto.randomBytes(6).toString('hex')}.tmp`,
  );
  const fd = fs.openSync(temp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o600);
  try {
    fs.writeSync(fd, text);
    if (sync) fs.fsyncSync(fd);
  } catch (e) {
    closeQuietly(fd);
    unlinkQuietly(temp);
    throw e;
  }
  fs.closeSync(fd);
  return temp;
}

/** Writes atomically; returns a warning string on failure, else null. */
function writeRecord(file, text) {
  let temp = null;
  try {
    temp = writeTempFile(file, text, { sync: true });
    fs.renameSync(temp, file);
    return null;
  } catch (e) {
    if (temp) unlinkQuietly(temp);
    return `could not cache the permission verdict in ${path.dirname(file)} (${e.code || e.message}); later steps will check again`;
  }
}

function closeQuietly(fd) {
  try {
    fs.closeSync(fd);
  } catch {
    // already failing; the caller reports why
  }
}

/** Removes `file`; true when it is gone (or never was). */
function unlinkQuietly(file) {
  try {
    fs.unlinkSync(file);
    return true;
  } catch (e) {
    return e.code === 'ENOENT';
  }
}

/** Deletes the record (a denial invalidates it); returns a warning or null. */
function deleteRecord(file) {
  try {
    fs.unlinkSync(file);
    return null;
  } catch (e) {
    if (e.code === 'ENOENT' || e.code === 'ENOTDIR') return null;
    return `could not delete the stale cached verdict ${file}: ${e.code || e.message}`;
  }
}

module.exports = { readRecord, writeRecord, deleteRecord, writeTempFile, unlinkQuietly };
