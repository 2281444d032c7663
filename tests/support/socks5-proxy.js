'use strict';
/**
 * A small SOCKS5 proxy (RFC 1928) on 127.0.0.1, for tests only.
 *
 *   const { startSocks5Proxy } = require('./socks5-proxy');
 *   const proxy = await startSocks5Proxy({});
 *   // proxy.url === 'socks5://127.0.0.1:PORT'
 *   ...
 *   await proxy.close();
 *
 * What it speaks:
 * - method negotiation: "no authentication required" (0x00) only; a client
 *   that does not offer it gets 0xFF (no acceptable methods) and is closed;
 * - the CONNECT command (0x01) only; BIND and UDP ASSOCIATE get reply 0x07
 *   (command not supported);
 * - address types IPv4 (0x01) and domain name (0x03); IPv6 (0x04) gets reply
 *   0x08 (address type not supported).
 *
 * It connects to the requested target and answers as a real proxy does:
 * 0x00 (succeeded) with the bound address once the target accepted, and then
 * pipes bytes both ways; when the target cannot be reached, the reply code of
 * the error (`replyCodeFor`): ECONNREFUSED 0x05 (connection refused),
 * EHOSTUNREACH 0x04 (host unreachable), ENETUNREACH 0x03 (network
 * unreachable), no answer within `connectTimeoutMs` 0x06 (TTL expired, the
 * code proxies use for a connect timeout), anything else 0x01 (general
 * failure); then it closes the client connection.
 *
 * Loopback only: a target other than 127.0.0.1 (or the domain name
 * `localhost`, taken as 127.0.0.1 without a DNS look-up) is never connected
 * to; it gets 0x02 (connection not allowed by ruleset).
 *
 * `connections` lists every client connection in order of arrival:
 * { host, port, reply, error } (host and port of the request once read;
 * reply the code sent, null before one is sent; error the target's error
 * code). Every wait is bounded: a client that does not finish its greeting
 * and request within `handshakeTimeoutMs` is closed.
 */

const net = require('node:net');

const { HOST, socketSet, listenOnLoopback } = require('./loopback-listener');

const REPLY = Object.freeze({
  SUCCEEDED: 0x00,
  GENERAL_FAILURE: 0x01,
  NOT_ALLOWED: 0x02,
  NETWORK_UNREACHABLE: 0x03,
  HOST_UNREACHABLE: 0x04,
  CONNECTION_REFUSED: 0x05,
  TTL_EXPIRED: 0x06,
  COMMAND_NOT_SUPPORTED: 0x07,
  ADDRESS_TYPE_NOT_SUPPORTED: 0x08,
});

/** The SOCKS5 reply code for a target connection's error. */
function replyCodeFor(error) {
  switch (error && error.code) {
    case 'ECONNREFUSED':
      return REPLY.CONNECTION_REFUSED;
    case 'EHOSTUNREACH':
      return REPLY.HOST_UNREACHABLE;
    case 'ENETUNREACH':
      return REPLY.NETWORK_UNREACHABLE;
    case 'ETIMEDOUT':
      return REPLY.TTL_EXPIRED;
    default:
      return REPLY.GENERAL_FAILURE;
  }
}

/** A reply: VER REP RSV ATYP(IPv4) BND.ADDR BND.PORT. */
function replyBytes(code, address = '0.0.0.0', port = 0) {
  const parts = net.isIPv4(address) ? address.split('.').map(Number) : [0, 0, 0, 0];
  return Buffer.from([0x05, code, 0x00, 0x01, ...parts, (port >> 8) & 0xff, port & 0xff]);
}

/**
 * Reads the greeting and the request from `buffer` as far as it goes.
 * Returns { need: true } when more bytes are needed, else what was read.
 */
function parseHandshake(buffer, stage) {
  if (stage === 'greeting') {
    if (buffer.length < 2) return { need: true };
    const count = buffer[1];
    if (buffer.length < 2 + count) return { need: true };
    return { version: buffer[0], methods: [...buffer.subarray(2, 2 + count)], used: 2 + count };
  }
  // request: VER CMD RSV ATYP DST.ADDR DST.PORT
  if (buffer.length < 5) return { need: true };
  const [version, command, , type] = buffer;
  let host;
  let offset;
  if (type === 0x01) {
    if (buffer.length < 10) return { need: true };
    host = [...buffer.subarray(4, 8)].join('.');
    offset = 8;
  } else if (type === 0x03) {
    const length = buffer[4];
    if (buffer.length < 5 + length + 2) return { need: true };
    host = buffer.subarray(5, 5 + length).toString('latin1');
    offset = 5 + length;
  } else if (type === 0x04) {
    if (buffer.length < 22) return { need: true };
    host = null;
    offset = 20;
  } else {
    return { version, command, type, host: null, port: 0, used: buffer.length };
  }
  const port = buffer.readUInt16BE(offset);
  return { version, command, type, host, port, used: offset + 2 };
}

/**
 * Starts the proxy.
 *
 * @param {object} [options]
 * @param {number} [options.connectTimeoutMs=5000] how long a target connect may take (then reply 0x06)
 * @param {number} [options.handshakeTimeoutMs=5000] how long a client may take to send its greeting and request
 * @returns {Promise<{ port: number, url: string, connections: object[], close: () => Promise<void> }>}
 */
async function startSocks5Proxy(options = {}) {
  const connectTimeoutMs = options.connectTimeoutMs === undefined ? 5000 : options.connectTimeoutMs;
  const handshakeTimeoutMs = options.handshakeTimeoutMs === undefined ? 5000 : options.handshakeTimeoutMs;
  const connections = [];
  const sockets = socketSet();
  const track = (socket) => sockets.track(socket);

  const server = net.createServer((client) => {
    track(client);
    if (sockets.closed) {
      client.destroy();
      return;
    }
    const record = { host: null, port: null, reply: null, error: null };
    connections.push(record);
    let buffer = Buffer.alloc(0);
    let stage = 'greeting';
    const handshakeTimer = setTimeout(() => client.destroy(), handshakeTimeoutMs);
    handshakeTimer.unref();

    const answer = (code, address, port) => {
      record.reply = code;
      if (code === REPLY.SUCCEEDED) client.write(replyBytes(code, address, port));
      else client.end(replyBytes(code));
    };

    const onData = (chunk) => {
      buffer = Buffer.concat([buffer, chunk]);
      if (stage === 'greeting') {
        const greeting = parseHandshake(buffer, 'greeting');
        if (greeting.need) return;
        buffer = buffer.subarray(greeting.used);
        if (greeting.version !== 0x05 || !greeting.methods.includes(0x00)) {
          clearTimeout(handshakeTimer);
          client.end(Buffer.from([0x05, 0xff]));
          return;
        }
        client.write(Buffer.from([0x05, 0x00]));
        stage = 'request';
      }
      if (stage !== 'request') return;
      const request = parseHandshake(buffer, 'request');
      if (request.need) return;
      stage = 'connecting';
      clearTimeout(handshakeTimer);
      client.off('data', onData);
      client.pause();
      const rest = buffer.subarray(request.used);
      buffer = null;
      record.host = request.host;
      record.port = request.port;
      if (request.version !== 0x05) return client.destroy();
      if (request.command !== 0x01) return answer(REPLY.COMMAND_NOT_SUPPORTED);
      if (request.type !== 0x01 && request.type !== 0x03) return answer(REPLY.ADDRESS_TYPE_NOT_SUPPORTED);
      const host = request.host === 'localhost' ? HOST : request.host;
      if (host !== HOST) return answer(REPLY.NOT_ALLOWED);
      connectTarget(host, request.port, rest);
    };

    const connectTarget = (host, port, rest) => {
      const target = net.connect({ host, port });
      track(target);
      let settled = false;
      const connectTimer = setTimeout(() => {
        if (settled) return;
        settled = true;
        record.error = 'ETIMEDOUT';
        target.destroy();
        answer(REPLY.TTL_EXPIRED);
      }, connectTimeoutMs);
      connectTimer.unref();
      target.once('error', (error) => {
        if (settled) {
          client.destroy();
          return;
        }
        settled = true;
        clearTimeout(connectTimer);
        record.error = error.code || String(error);
        answer(replyCodeFor(error));
      });
      target.once('connect', () => {
        if (settled) {
          target.destroy();
          return;
        }
        settled = true;
        clearTimeout(connectTimer);
        if (client.destroyed) {
          target.destroy();
          return;
        }
        answer(REPLY.SUCCEEDED, target.localAddress, target.localPort);
        if (rest.length > 0) target.write(rest);
        client.pipe(target);
        target.pipe(client);
        client.resume();
        client.on('close', () => target.destroy());
        target.on('close', () => client.destroy());
      });
      client.on('close', () => {
        if (!settled) {
          settled = true;
          clearTimeout(connectTimer);
          target.destroy();
        }
      });
    };

    client.on('data', onData);
    client.on('close', () => clearTimeout(handshakeTimer));
  });

  return listenOnLoopback(server, sockets, { scheme: 'socks5', connections });
}

module.exports = { startSocks5Proxy, replyCodeFor, REPLY };
