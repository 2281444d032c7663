'use strict';
// What the kubeconfig's current user holds that could be its credential,
// as facts for the core, which chooses one (src/credential.rs): an inline
// token, the auth provider's token file (read on every check, so a rotated
// token is seen), the client key's data and its file. The files named are
// read here; nothing is chosen here. Every candidate is also a secret that
// error texts must hide, chosen or not.

const fs = require('node:fs');

// A token is 1-2 KB and a client key a few KB: a larger file is not read.
const CREDENTIAL_FILE_LIMIT = 1024 * 1024;

/**
 * `{ facts, secrets }`: `facts` for the core (`{token?, tokenFile?,
 * keyData?, keyFile?}`, each file as `{path, type: 'read', bytes}`,
 * `{path, type: 'notRegular' | 'tooLarge'}` or `{path, type: 'failed',
 * code}`), and `secrets`, every candidate's value.
 */
function credentialFacts(kubeConfig) {
  const facts = {};
  let keyText;
  const user = currentUser(kubeConfig);
  if (user) {
    // As the client sends it (`Bearer ${token}`): a YAML number is a token too.
    const token = text(field(user, 'token'));
    if (token !== undefined) facts.token = token;
    const config = field(field(user, 'authProvider'), 'config');
    const tokenFile = field(config, 'tokenFile') || field(config, 'token-file');
    if (tokenFile) facts.tokenFile = readFile(tokenFile);
    const keyData = field(user, 'keyData');
    if (typeof keyData === 'string') {
      facts.keyData = new Uint8Array(Buffer.from(keyData, 'base64'));
      // Hidden as the kubeconfig holds it, too.
      keyText = keyData;
    }
    const keyFile = field(user, 'keyFile');
    if (typeof keyFile === 'string' && keyFile) facts.keyFile = readFile(keyFile);
  }
  const secrets = [facts.token, facts.tokenFile && facts.tokenFile.bytes, facts.keyData, keyText, facts.keyFile && facts.keyFile.bytes];
  return { facts, secrets: secrets.filter((s) => s !== undefined) };
}

function currentUser(kubeConfig) {
  try {
    return kubeConfig && typeof kubeConfig.getCurrentUser === 'function' ? kubeConfig.getCurrentUser() : null;
  } catch {
    return null;
  }
}

/** `value` as a template literal shows it, unless it is absent or its `toString` throws. */
function text(value) {
  if (value === undefined || value === null || typeof value === 'symbol') return undefined;
  try {
    return String(value);
  } catch {
    return undefined;
  }
}

// A host's user object may have throwing getters: such a field is absent.
function field(object, name) {
  if (!object || typeof object !== 'object') return undefined;
  try {
    return object[name];
  } catch {
    return undefined;
  }
}

function readFile(path) {
  if (typeof path !== 'string') return { path: null, type: 'failed', code: 'ERR_INVALID_ARG_TYPE' };
  try {
    // Looked at first: reading a FIFO or a device would block or never end.
    const stat = fs.statSync(path);
    if (!stat.isFile()) return { path, type: 'notRegular' };
    if (stat.size > CREDENTIAL_FILE_LIMIT) return { path, type: 'tooLarge' };
    const bytes = fs.readFileSync(path);
    // It may have grown since it was looked at.
    if (bytes.length > CREDENTIAL_FILE_LIMIT) return { path, type: 'tooLarge' };
    return { path, type: 'read', bytes: new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.length) };
  } catch (e) {
    return { path, type: 'failed', code: e && typeof e.code === 'string' ? e.code : 'EIO' };
  }
}

module.exports = { credentialFacts };
