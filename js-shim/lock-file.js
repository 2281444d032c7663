'use strict';
// The lock file that lets one hook process of a job ask the API while the
// others wait for its record. Only file mechanics live here: whether a lock
// is stale, how long to wait and when to give up are the core's decisions
// (SingleFlight in src/single_flight.rs).
//
// - The lock is made whole before it appears: a temp file (O_EXCL, mode
//   0600) with "<pid> <host> <nonce>" is hard-linked to the lock path, which
//   fails with EEXIST if any lock is there. So a lock is never seen
//   half-written, and a symlink at the path is never followed.
// - The holder is judged from that content: a process of this host that
//   is running ("alive"), has exited ("dead"), another host's ("unknown"),
//   or something that is not our lock ("invalid").
// - Release removes the lock only if it is still ours.

const fs = require('node:fs');
const os = require('node:os');
const { readRecord, writeTempFile, unlinkQuietly } = require('./cache-file');

const MAX_LOCK_BYTES = 256;
const LOCK_LINE = /^(\d{1,10}) (\S{1,128}) ([0-9a-f]{16})\n$/;

/**
 * Tries to create the lock. Returns `{ type: 'acquired', lock }`,
 * `{ type: 'held', ageMs, holder }` or `{ type: 'unavailable', reason }`.
 */
function acquireLock(file, now) {
  // Loaded here, not at the top: a step answered from the cache never needs
  // it (tests/js/lazy-client.test.js), and it costs about 3 ms to load.
  const crypto = require('node:crypto');
  const content = `${process.pid} ${os.hostname()} ${crypto.randomBytes(8).toString('hex')}\n`;
  let temp;
  try {
    temp = writeTempFile(file, content, { sync: false });
  } catch (e) {
    // A read-only or full disk, no permission: no lock here, ever.
    return { type: 'unavailable', reason: e.code || e.message };
  }
  try {
    for (let tries = 1; ; tries++) {
      try {
        fs.linkSync(temp, file);
        return { type: 'acquired', lock: { file, content } };
      } catch (e) {
        if (e.code !== 'EEXIST') return { type: 'unavailable', reason: e.code || e.message };
      }
      const held = inspectLock(file, now);
      if (held) return held;
      // Gone between the link and the look: its holder has just released
      // it. Try again; after a few tries, say it is held (the core then waits
      // a look) rather than have anything removed that may be new.
      if (tries === 3) return { type: 'held', ageMs: 0, holder: 'unknown' };
    }
  } finally {
    unlinkQuietly(temp);
  }
}

/** Who holds the lock at `file`, and how old it is; null when it is gone. */
function inspectLock(file, now) {
  let stat;
  try {
    stat = fs.lstatSync(file);
  } catch (e) {
    if (e.code === 'ENOENT') return null;
    return { type: 'held', ageMs: 0, holder: 'invalid' };
  }
  const ageMs = Math.max(0, now - stat.mtimeMs);
  if (!stat.isFile()) return { type: 'held', ageMs, holder: 'invalid' };
  const text = readLockText(file);
  const match = text === null ? null : LOCK_LINE.exec(text);
  if (!match) return { type: 'held', ageMs, holder: 'invalid' };
  const [, pid, host] = match;
  if (host !== os.hostname()) return { type: 'held', ageMs, holder: 'unknown' };
  return { type: 'held', ageMs, holder: isRunning(Number(pid)) ? 'alive' : 'dead' };
}

function isRunning(pid) {
  if (!Number.isSafeInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    // EPERM: it exists, it is just not ours to signal.
    return e.code === 'EPERM';
  }
}

/** The lock's text, read as the record is (no symlink, no FIFO, bounded); null if odd. */
function readLockText(file) {
  const { bytes } = readRecord(file, MAX_LOCK_BYTES);
  return bytes && bytes.length <= MAX_LOCK_BYTES ? bytes.toString('utf8') : null;
}

/** Removes a stale lock; true when it is gone. */
const removeLock = unlinkQuietly;

/** Removes the lock if it is still the one `acquireLock` made. */
function releaseLock(lock) {
  // Gone already is fine: someone judged it stale.
  if (readLockText(lock.file) === lock.content) unlinkQuietly(lock.file);
}

module.exports = { acquireLock, removeLock, releaseLock };
