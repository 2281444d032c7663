'use strict';
// Every file action the core's check asks for, by its `type`, and the fact
// each one reports. Nothing here chooses what to do next.

const { readRecord, writeRecord, deleteRecord } = require('./cache-file');
const { createLock, inspectLock, probeProcess, removeFile } = require('./lock-file');
const { readKeyFile, createKeyFile } = require('./key-file');

const fileActions = {
  readKeyFile: (a) => ({ type: 'keyFile', report: readKeyFile(a.file, a.limit) }),
  createKeyFile: (a) => {
    const createError = createKeyFile(a, a.text);
    return { type: 'keyFile', report: { ...readKeyFile(a.file, a.limit), createError } };
  },
  readRecord: (a) => readRecord(a.file, a.limit),
  createLock: (a) => createLock(a.file, a.content),
  inspectLock: (a) => inspectLock(a.file, a.limit),
  probeProcess: (a) => probeProcess(a.pid),
  removeFile: (a) => removeFile(a.file),
  writeRecord: (a) => writeRecord(a.file, a.text),
  deleteRecord: (a) => deleteRecord(a.file),
};

/** Does `action` and returns its fact; an action this shim does not know is a bug. */
function performFileAction(action) {
  const perform = Object.prototype.hasOwnProperty.call(fileActions, action.type) ? fileActions[action.type] : null;
  if (!perform) throw new Error(`k8s-auth-preflight: the core asked for an unknown action ${JSON.stringify(action.type)}`);
  return perform(action);
}

module.exports = { performFileAction };
