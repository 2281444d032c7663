'use strict';
// The runner's POSIX cksum CRC (js-shim/cksum.js) is what this machine's
// `cksum` prints, for any length and any way the bytes come in chunks: a
// pod with coreutils checks a copy's bytes with it.

const test = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const path = require('node:path');
const { spawnSync } = require('node:child_process');

const { consumerDir } = require('./support/consumer');

const cksum = require(path.join(consumerDir, 'node_modules', 'k8s-auth-preflight', 'js-shim', 'cksum.js'));

function theirs(bytes) {
  const r = spawnSync('cksum', { input: bytes, encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return Number(r.stdout.split(' ')[0]);
}

test('cksum: the CRC of every length up to 300 bytes, and of larger ones (counts of 1 to 4 bytes), is the one coreutils prints, however the bytes are cut into chunks', () => {
  const lengths = [...Array.from({ length: 301 }, (_, i) => i), 65_535, 65_536, 65_543, 16_777_217];
  for (const length of lengths) {
    const bytes = crypto.randomBytes(length);
    const want = theirs(bytes);
    assert.equal(cksum.finish(cksum.update(0, bytes), length), want, `${length} bytes whole`);
    if (length < 3) continue;
    // Cut at odd places: the carried CRC must not depend on them.
    let crc = 0;
    const cuts = [0, 1, Math.floor(length / 3), Math.floor(length / 3) + 7, length];
    for (let i = 1; i < cuts.length; i++) crc = cksum.update(crc, bytes.subarray(cuts[i - 1], cuts[i]));
    assert.equal(cksum.finish(crc, length), want, `${length} bytes in chunks`);
  }
});
