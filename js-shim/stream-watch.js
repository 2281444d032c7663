'use strict';
// Watches one open exec stream (client-node's WebSocket) and reports how it
// ended: with the status the server sent, or cut (closed or reset with no
// status, or silent: no pong for the deadline the core gave, after which the
// socket is terminated). The numbers are the core's; this only keeps time,
// on the clock it is given (the host's injected clock).

/**
 * `socket` the exec's WebSocket; `hasStatus()` whether its status arrived;
 * `pingEveryMs`/`pongDeadlineMs` from the core; `onEnd({ status, why })`
 * is called once: `status` true when it ended with its status, else `why`
 * says what was seen. With `endAtStatus`, the stream counts as ended as soon
 * as its status has arrived (the server sends nothing after it), not when
 * the server has closed it. `clock()` gives the time in ms (by default
 * performance.now). Returns `stop()`, which ends the watch quietly.
 */
const MOVING_BYTES = 16 * 1024;

function watchStream(socket, { hasStatus, pingEveryMs, pongDeadlineMs, onEnd, endAtStatus = false, clock = () => performance.now() }) {
  let ended = false;
  let lastHeard = clock();
  let failure = null;
  let timer = null;
  const stop = () => {
    ended = true;
    if (timer) clearInterval(timer);
    timer = null;
  };
  const end = (why) => {
    if (ended) return;
    stop();
    onEnd(hasStatus() ? { status: true, why: null } : { status: false, why });
  };
  const on = (event, listener) => {
    try {
      socket.on(event, listener);
    } catch {
      // not an emitter: nothing to hear
    }
  };
  on('pong', () => {
    lastHeard = clock();
  });
  // One look per turn of the event loop, after the frames it brought.
  let looking = false;
  const look = () => {
    looking = false;
    if (hasStatus()) end(null);
  };
  on('message', () => {
    lastHeard = clock();
    // (client-node hears each frame before this listener, which came later.)
    if (endAtStatus && !looking) {
      looking = true;
      setImmediate(look);
    }
  });
  on('error', (error) => {
    failure = (error && error.message) || 'the connection failed';
  });
  on('close', (code) => {
    // The status frame is handled before the close: let it land first.
    setImmediate(() => end(failure || closeReason(code)));
  });
  // Bytes the connection has handed on (written, and no longer waiting in
  // its buffer): while they move, the other end is taking them. A caller
  // that sends a long stdin to a pod that reads it slowly waits behind it
  // for its pongs, which queue after the data; the stream is not silent.
  // (Our own pings and pongs are a few bytes each: only more than
  // MOVING_BYTES between two looks counts, or a connection whose kernel
  // buffer still takes our pings would never be found silent.)
  const handedOn = () => {
    try {
      const raw = socket._socket;
      const n = raw ? raw.bytesWritten - raw.writableLength : NaN;
      return Number.isFinite(n) ? n : null;
    } catch {
      return null;
    }
  };
  let lastHandedOn = handedOn();
  if (typeof pingEveryMs === 'number' && pingEveryMs > 0) {
    timer = setInterval(() => {
      if (ended) return;
      const now = handedOn();
      if (now !== null && lastHandedOn !== null && now - lastHandedOn > MOVING_BYTES) lastHeard = clock();
      lastHandedOn = now;
      if (clock() - lastHeard > pongDeadlineMs) {
        try {
          socket.terminate();
        } catch {
          // already gone
        }
        end(`no pong within ${pongDeadlineMs} ms`);
        return;
      }
      try {
        if (socket.readyState === 1) socket.ping();
      } catch {
        // a ping that cannot be sent is heard of at the deadline
      }
    }, pingEveryMs);
    if (typeof timer.unref === 'function') timer.unref();
  }
  return stop;
}

function closeReason(code) {
  if (code === 1006) return 'the connection was lost (WebSocket close 1006)';
  if (typeof code === 'number') return `the stream closed with code ${code} and no status`;
  return 'the stream closed with no status';
}

module.exports = { watchStream };
