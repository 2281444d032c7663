'use strict';
// The watch of an open exec stream keeps the pong deadline on the clock it
// is given (the wrapper's clock), never on one of its own.

const test = require('node:test');
const assert = require('node:assert/strict');
const { EventEmitter } = require('node:events');

const { watchStream } = require('../../js-shim/stream-watch');

function socket() {
  const s = new EventEmitter();
  s.readyState = 1;
  s.pings = 0;
  s.ping = () => {
    s.pings += 1;
  };
  s.terminate = () => {
    s.readyState = 3;
  };
  return s;
}

test('the pong deadline is counted on the given clock: past it there, the stream is cut at the next ping, however little real time went by', async () => {
  for (const [jump, cut] of [
    [0, false],
    [999, false],
    [1001, true],
  ]) {
    let now = 5_000;
    const s = socket();
    const ends = [];
    const stop = watchStream(s, { hasStatus: () => false, pingEveryMs: 10, pongDeadlineMs: 1000, clock: () => now, onEnd: (e) => ends.push(e) });
    now += jump;
    const began = performance.now();
    while (s.pings < 3 && ends.length === 0 && performance.now() - began < 2000) await new Promise((r) => setTimeout(r, 5));
    stop();
    if (cut) {
      assert.deepEqual(ends, [{ status: false, why: 'no pong within 1000 ms' }], `jump ${jump}`);
      assert.equal(s.readyState, 3, 'the socket is terminated');
    } else {
      assert.deepEqual(ends, [], `jump ${jump}`);
      assert.ok(s.pings >= 3, `jump ${jump}: pinged`);
    }
  }
});

test('a pong heard on the given clock moves the deadline', async () => {
  let now = 0;
  const s = socket();
  const ends = [];
  const stop = watchStream(s, { hasStatus: () => false, pingEveryMs: 10, pongDeadlineMs: 1000, clock: () => now, onEnd: (e) => ends.push(e) });
  now = 900;
  s.emit('pong');
  now = 1800;
  await new Promise((r) => setTimeout(r, 40));
  assert.deepEqual(ends, []);
  now = 1901;
  const began = performance.now();
  while (ends.length === 0 && performance.now() - began < 2000) await new Promise((r) => setTimeout(r, 5));
  stop();
  assert.deepEqual(ends, [{ status: false, why: 'no pong within 1000 ms' }]);
});
