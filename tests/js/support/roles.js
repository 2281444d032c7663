'use strict';
// The RBAC fixtures the loopback apiserver is given: the 13 permissions the
// package checks by default, and a Role that grants exactly those. Loads
// nothing else, so bench/chaos/ and demo/ can use it before the package is
// installed.

/** The 13 (verb, resource, subresource) triples the default table expands to. */
const DEFAULT_PERMISSIONS = Object.freeze([
  ['get', 'pods', ''],
  ['list', 'pods', ''],
  ['create', 'pods', ''],
  ['delete', 'pods', ''],
  ['get', 'pods', 'exec'],
  ['create', 'pods', 'exec'],
  ['get', 'pods', 'log'],
  ['list', 'pods', 'log'],
  ['watch', 'pods', 'log'],
  ['get', 'secrets', ''],
  ['list', 'secrets', ''],
  ['create', 'secrets', ''],
  ['delete', 'secrets', ''],
]);

/** A Role granting exactly the 13 default permissions, nothing more (a new object each call). */
function fullRole() {
  return {
    rules: [
      { apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'create', 'delete'] },
      { apiGroups: [''], resources: ['pods/exec'], verbs: ['get', 'create'] },
      { apiGroups: [''], resources: ['pods/log'], verbs: ['get', 'list', 'watch'] },
      { apiGroups: [''], resources: ['secrets'], verbs: ['get', 'list', 'create', 'delete'] },
    ],
  };
}

/** The full Role without one verb on one resource ('pods/exec' style). */
function roleWithout(verb, resource) {
  const role = fullRole();
  for (const rule of role.rules) {
    if (rule.resources.includes(resource)) rule.verbs = rule.verbs.filter((v) => v !== verb);
  }
  return role;
}

module.exports = { DEFAULT_PERMISSIONS, fullRole, roleWithout };
