'use strict';
// Reading, writing and deleting the cache record file, reported as plain
// facts. Whether a record is usable, and what a failed read or write
// means, are the core's decisions (src/check/record_file.rs).
//
// The folder ($RUNNER_TEMP) is on the work volume that job containers mount,
// so the file may be anything: a symlink, a FIFO, a directory, 100 MB of junk.
// - reads open with O_NOFOLLOW | O_NONBLOCK, check that it is a regular file,
//   and read at most `limit + 1` bytes.
// - writes go to a fresh temp file (O_EXCL | O_NOFOLLOW, mode 0600) in the
//   same folder, then rename() over the path: atomic, and a symlink at the
//   path is replaced, never followed.

const fs = require('node:fs');
const path = require('node:path');

const { O_RDONLY, O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW, O_NONBLOCK } = fs.constants;

const codeOf = (e) => e.code || e.message;

/**
 * What reading `file` gave: `{type: 'recordBytes', bytes}` (at most
 * `limit + 1` of them), `{type: 'recordOpenFailed', code}`,
 * `{type: 'recordNotAFile'}` or `{type: 'recordReadFailed', code}`.
 */
function readRecord(file, limit) {
  let fd;
  try {
    fd = fs.openSync(file, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
  } catch (e) {
    return { type: 'recordOpenFailed', code: codeOf(e) };
  }
  try {
    if (!fs.fstatSync(fd).isFile()) return { type: 'recordNotAFile' };
    const buffer = Buffer.alloc(limit + 1);
    let length = 0;
    while (length < buffer.length) {
      const n = fs.readSync(fd, buffer, length, buffer.length - length, null);
      if (n === 0) break;
      length += n;
    }
    return { type: 'recordBytes', bytes: buffer.subarray(0, length) };
  } catch (e) {
    return { type: 'recordReadFailed', code: codeOf(e) };
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * Writes `text` to a fresh temp file next to `file` (O_EXCL | O_NOFOLLOW,
 * mode 0600; fsynced when `sync`) and returns its path. On failure it
 * throws and leaves nothing behind. The record (renamed over its path), the
 * lock file and the runner key file (hard-linked to theirs) are made this way.
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

/** Writes the record atomically: `{type: 'written', code}`, `code` null when it worked. */
function writeRecord(file, text) {
  let temp = null;
  try {
    temp = writeTempFile(file, text, { sync: true });
    fs.renameSync(temp, file);
    return { type: 'written', code: null };
  } catch (e) {
    if (temp) unlinkQuietly(temp);
    return { type: 'written', code: codeOf(e) };
  }
}

/** Deletes the record: `{type: 'deleted', code}`, `code` null when it worked. */
function deleteRecord(file) {
  return { type: 'deleted', code: unlink(file) };
}

/** Unlinks `file`: null, or the error code. */
function unlink(file) {
  try {
    fs.unlinkSync(file);
    return null;
  } catch (e) {
    return codeOf(e);
  }
}

function closeQuietly(fd) {
  try {
    fs.closeSync(fd);
  } catch {
    // already failing; the caller reports why
  }
}

/** Removes a temp file of ours; a failure has nobody to tell. */
function unlinkQuietly(file) {
  unlink(file);
}

module.exports = { readRecord, writeRecord, deleteRecord, writeTempFile, unlink, unlinkQuietly };
