'use strict';
// A folder's entries as comparable lines, for tests that copy folders.

const crypto = require('node:crypto');
const fs = require('node:fs');

/**
 * Every entry under `root` as one line: its path as bytes (hex: names may
 * hold any byte but / and NUL), its kind, and a file's user mode bits, size
 * and SHA-256, a folder's user mode bits, or a link's target. Sorted, so
 * two trees compare with deepEqual.
 */
function tree(root) {
  const out = [];
  const walk = (dir, rel) => {
    for (const name of fs.readdirSync(dir, { encoding: 'buffer' })) {
      const full = Buffer.concat([Buffer.from(`${dir}/`), name]);
      const relName = rel ? Buffer.concat([rel, Buffer.from('/'), name]) : name;
      const st = fs.lstatSync(full);
      const key = relName.toString('hex');
      const user = ((st.mode >> 6) & 7).toString(8);
      if (st.isSymbolicLink()) out.push(`${key} link ${fs.readlinkSync(full, { encoding: 'buffer' }).toString('hex')}`);
      else if (st.isDirectory()) {
        out.push(`${key} dir u${user}`);
        walk(full, relName);
      } else out.push(`${key} file u${user} ${st.size} ${crypto.createHash('sha256').update(fs.readFileSync(full)).digest('hex')}`);
    }
  };
  walk(root, null);
  return out.sort();
}

/** `tree`'s lines whose path starts with `prefix` (a text), or without them (`keep` false). */
function under(lines, prefix, keep = true) {
  const hex = Buffer.from(prefix).toString('hex');
  return lines.filter((line) => line.startsWith(hex) === keep);
}

/** A tree's line, readable: its path as text. */
const readable = (line) => {
  const [hex, ...rest] = line.split(' ');
  return `${JSON.stringify(Buffer.from(hex, 'hex').toString('latin1'))} ${rest.join(' ')}`;
};

module.exports = { tree, under, readable };
