'use strict';
/**
 * What the test proxies share: the sockets they hold, listening on an
 * ephemeral port of 127.0.0.1, and a close that destroys every socket held
 * (tunnels included) before the server stops.
 *
 *   const sockets = socketSet();
 *   server.on('connection', (s) => { sockets.track(s); if (sockets.closed) s.destroy(); });
 *   return listenOnLoopback(server, sockets, { scheme: 'socks5', connections });
 */

const HOST = '127.0.0.1';

/** The sockets of one server; `closed` once its close has begun. */
function socketSet() {
  const all = new Set();
  return {
    closed: false,
    track(socket) {
      all.add(socket);
      socket.on('close', () => all.delete(socket));
      socket.on('error', () => {});
    },
    destroyAll() {
      for (const socket of all) socket.destroy();
      all.clear();
    },
  };
}

/** Listens on 127.0.0.1; resolves with `{ port, url, connections, close() }`. */
async function listenOnLoopback(server, sockets, { scheme, connections }) {
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port: 0, host: HOST }, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = server.address().port;
  return {
    port,
    url: `${scheme}://${HOST}:${port}`,
    connections,
    close() {
      if (sockets.closed) return Promise.resolve();
      sockets.closed = true;
      sockets.destroyAll();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

module.exports = { HOST, socketSet, listenOnLoopback };
