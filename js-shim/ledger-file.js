'use strict';
// The ledger of delivered durable runs (src/durable/delivered.rs): read
// with the record file's reader (cache-file.js: no link followed, regular
// files only, bounded), appended to here. Its folder ($RUNNER_TEMP) is one
// that job containers can write, so the path may be anything.

const fs = require('node:fs');

const { readRecord } = require('./cache-file');

const { O_WRONLY, O_APPEND, O_CREAT, O_NOFOLLOW, O_NONBLOCK } = fs.constants;

/** The ledger's text, or null when it could not be read as a regular file of at most `limit` bytes. */
function readLedger(file, limit) {
  const read = readRecord(file, limit);
  if (read.type !== 'recordBytes' || read.bytes.length > limit) return null;
  return read.bytes.toString('utf8');
}

/**
 * Appends `text` (whole lines) to `file`, made if missing (mode 0600); a
 * link at the path, or anything but a regular file, is left alone. Best
 * effort: what could not be written is lost, and the runs it names stay in
 * their pod until the pod is deleted.
 */
function appendLedger(file, text) {
  let fd;
  try {
    // O_NONBLOCK: a FIFO put at the path fails at once instead of waiting.
    fd = fs.openSync(file, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK, 0o600);
    if (fs.fstatSync(fd).isFile()) fs.writeSync(fd, text);
  } catch {
    // nothing more to do: see above
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}

module.exports = { readLedger, appendLedger };
