'use strict';
/**
 * A small HTTP CONNECT proxy (RFC 9110 section 9.3.6) on 127.0.0.1, for
 * tests only.
 *
 *   const { startConnectProxy } = require('./connect-proxy');
 *   const proxy = await startConnectProxy();
 *   // proxy.url === 'http://127.0.0.1:PORT'
 *   ...
 *   await proxy.close();
 *
 * A `CONNECT host:port HTTP/1.1` request is answered as common proxies
 * (Squid, for one) answer it: once the target accepted the connection,
 * `HTTP/1.1 200 Connection established` and then the bytes are piped both
 * ways (whatever the client sent after its request head is passed on
 * first); when the target refused, `HTTP/1.1 503 Service Unavailable`; on
 * any other target error, or no connection within `connectTimeoutMs`,
 * `HTTP/1.1 502 Bad Gateway`. Error answers carry a short text body and
 * close the connection.
 *
 * Loopback only: a target other than 127.0.0.1 (or `localhost`, taken as
 * 127.0.0.1 without a DNS look-up) is never connected to; it gets
 * `403 Forbidden`. Any other method (plain proxying of absolute URIs) gets
 * `405 Method Not Allowed`.
 *
 * `connections` lists every CONNECT request in order of arrival:
 * { host, port, status, error } (status the code answered, null before an
 * answer; error the target's error code).
 */

const http = require('node:http');
const net = require('node:net');

const { HOST, socketSet, listenOnLoopback } = require('./loopback-listener');

/** Splits a CONNECT request target "host:port" ("[v6]:port" too); null when it is not one. */
function parseAuthority(value) {
  const match = /^(?:\[([^\]]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(String(value || ''));
  if (!match) return null;
  const port = Number(match[3]);
  if (port < 1 || port > 65535) return null;
  return { host: match[1] || match[2], port };
}

/** The answer to a CONNECT whose target could not be reached: 503 when it refused, else 502. */
function statusFor(error) {
  if (error && error.code === 'ECONNREFUSED') return { status: 503, reason: 'Service Unavailable' };
  return { status: 502, reason: 'Bad Gateway' };
}

function errorHead(status, reason, body) {
  return [
    `HTTP/1.1 ${status} ${reason}`,
    'Content-Type: text/plain',
    `Content-Length: ${Buffer.byteLength(body)}`,
    'Connection: close',
    '',
    body,
  ].join('\r\n');
}

/**
 * Starts the proxy.
 *
 * @param {object} [options]
 * @param {number} [options.connectTimeoutMs=5000] how long a target connect may take (then 502)
 * @returns {Promise<{ port: number, url: string, connections: object[], close: () => Promise<void> }>}
 */
async function startConnectProxy(options = {}) {
  const connectTimeoutMs = options.connectTimeoutMs === undefined ? 5000 : options.connectTimeoutMs;
  const connections = [];
  const sockets = socketSet();
  const track = (socket) => sockets.track(socket);

  const server = http.createServer((req, res) => {
    const body = 'this proxy only tunnels (CONNECT)\n';
    res.writeHead(405, { 'content-type': 'text/plain', 'content-length': Buffer.byteLength(body), connection: 'close', allow: 'CONNECT' });
    res.end(body);
  });
  server.on('connection', (socket) => {
    track(socket);
    if (sockets.closed) socket.destroy();
  });
  server.on('clientError', (_error, socket) => socket.destroy());

  server.on('connect', (req, client, head) => {
    const record = { host: null, port: null, status: null, error: null };
    connections.push(record);
    const fail = (status, reason, text) => {
      record.status = status;
      client.end(errorHead(status, reason, `${text}\n`));
    };
    const authority = parseAuthority(req.url);
    if (!authority) return fail(400, 'Bad Request', `not a host:port: ${req.url}`);
    record.host = authority.host;
    record.port = authority.port;
    const host = authority.host === 'localhost' ? HOST : authority.host;
    if (host !== HOST) return fail(403, 'Forbidden', `this proxy only connects to ${HOST}`);

    const target = net.connect({ host, port: authority.port });
    track(target);
    let settled = false;
    const timer = setTimeout(() => {
      if (settled) return;
      settled = true;
      record.error = 'ETIMEDOUT';
      target.destroy();
      fail(502, 'Bad Gateway', `connect to ${req.url} timed out`);
    }, connectTimeoutMs);
    timer.unref();
    target.once('error', (error) => {
      if (settled) {
        client.destroy();
        return;
      }
      settled = true;
      clearTimeout(timer);
      record.error = error.code || String(error);
      const { status, reason } = statusFor(error);
      fail(status, reason, status === 503 ? `connect to ${req.url} refused` : `connect to ${req.url} failed: ${record.error}`);
    });
    target.once('connect', () => {
      if (settled) {
        target.destroy();
        return;
      }
      settled = true;
      clearTimeout(timer);
      if (client.destroyed) {
        target.destroy();
        return;
      }
      record.status = 200;
      client.write('HTTP/1.1 200 Connection established\r\n\r\n');
      if (head && head.length > 0) target.write(head);
      client.pipe(target);
      target.pipe(client);
      client.on('close', () => target.destroy());
      target.on('close', () => client.destroy());
    });
    client.on('close', () => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      target.destroy();
    });
  });

  return listenOnLoopback(server, sockets, { scheme: 'http', connections });
}

module.exports = { startConnectProxy, parseAuthority, statusFor };
