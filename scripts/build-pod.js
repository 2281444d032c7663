'use strict';
// Builds the pod program (pod/*.sh) into the compact scripts a durable exec
// sends in its exec URL, pkg/pod-program.js. Every rule here is mechanical,
// and each is checked where it could go wrong (tests/js/pod-build.test.js):
//
// 1. Each step file's `. ./lib/<name>.sh` lines are replaced by that file;
//    lib/table.sh by the core's own table (podShellTable), which the file in
//    pod/ must equal (--write makes it again).
// 2. The table's constants (POD_<NAME>=<value>) are put in place of their
//    names, and their lines dropped.
// 3. Comment lines, blank lines and indentation go; so do the spaces around
//    `;`, `&&`, `||` and `|` outside quotes. A comment after code is refused.
// 4. Every name the program gives a value or a function (lowercase: the
//    environment's are uppercase) becomes `_K` and a few letters, in the
//    order the names first appear: the URL is short, and no variable of the
//    container's environment shares a name with ours (the shell exports
//    every variable that came from the environment, with our value). A name
//    set and not renamed, or a function named where no command can start,
//    fails the build.
// 5. Each script starts with a line that exits NAME_TAKEN when any of those
//    variables is already set, which only the environment can do.

const fs = require('node:fs');
const path = require('node:path');

const POD = path.join(__dirname, '..', 'pod');
const STEPS = ['start', 'look', 'attach', 'finish', 'cleanup', 'kill', 'copy-in', 'copy-out', 'copy-remove'];
const TABLE = 'lib/table.sh';
const PREFIX = '_K';
const NAME = '[a-z][a-z0-9_]*';
// A read's options before its names (`-r`, and bash's `-d ''`).
const READ_OPTIONS = "((?:-[a-z]+ (?:'' )?)+)";
const THEIRS = new Set(['LC_ALL', 'IFS']);

/** `text` with its `. ./lib/x.sh` lines replaced by the files (`read(name)`), each once. */
function inline(text, read, seen = new Set()) {
  return text.replace(/^[ \t]*\. \.\/(lib\/[a-z-]+\.sh)[ \t]*$/gm, (_line, name) => {
    if (seen.has(name)) throw new Error(`build-pod: ${name} is sourced twice`);
    seen.add(name);
    return inline(read(name), read, seen);
  });
}

/** The positions in `text` outside quotes: a function of index to true/false. */
function quoting(text) {
  const outside = new Uint8Array(text.length);
  let quote = null;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quote === "'") {
      if (c === "'") quote = null;
    } else if (quote === '"') {
      if (c === '\\') i++;
      else if (c === '"') quote = null;
    } else if (c === '\\') {
      outside[i] = 1;
      i++;
    } else if (c === "'" || c === '"') {
      quote = c;
    } else {
      outside[i] = 1;
    }
  }
  if (quote) throw new Error('build-pod: a quote is never closed');
  return (i) => outside[i] === 1;
}

/** Rule 2: the table's constants in place of their names. */
function constants(text) {
  const values = new Map();
  const rest = text.replace(/^[ \t]*POD_([A-Z_]+)=(.*)$/gm, (_line, name, value) => {
    values.set(name, value.replace(/^'(.*)'$/, '$1'));
    return '';
  });
  const put = rest.replace(/"\$POD_([A-Z_]+)"|\$\{POD_([A-Z_]+)\}|\$POD_([A-Z_]+)/g, (all, a, b, c) => {
    const name = a || b || c;
    if (!values.has(name)) throw new Error(`build-pod: POD_${name} is not in the table`);
    return values.get(name);
  });
  if (/POD_/.test(put)) throw new Error('build-pod: a POD_ name is left after the table was put in');
  return put;
}

/** Rule 3: no comments, blank lines, indentation, or spaces around operators. */
function compact(text) {
  const lines = text
    .split('\n')
    .map((line) => line.replace(/^[ \t]+/, ''))
    .filter((line) => line !== '' && !line.startsWith('#'));
  const joined = lines.join('\n');
  const outside = quoting(joined);
  let out = '';
  for (let i = 0; i < joined.length; i++) {
    const c = joined[i];
    if (c === '#' && outside(i) && /\s/.test(joined[i - 1])) throw new Error(`build-pod: a comment after code: ${joined.slice(i - 30, i + 30)}`);
    if ((c === ' ' || c === '\t') && outside(i)) {
      const before = out[out.length - 1];
      const after = joined[i + 1];
      // (`;` and `|` are operators only outside quotes; a `;` that ends a
      // `case` item stays `;;`.)
      if (before === ';' || before === '|' || (before === '&' && out[out.length - 2] === '&')) continue;
      if (after === ';' || after === '|' || (after === '&' && joined[i + 2] === '&')) continue;
      if (c === '\t') {
        out += ' ';
        continue;
      }
    }
    out += c;
  }
  return out;
}

/** Rule 4: our names, short and prefixed. */
// Where a name is given a value, or read.
const SETTING = [
  new RegExp(`(?:^|[\\s;(){&|])(${NAME})=`, 'g'),
  new RegExp(`\\bread -r ((?:${NAME} )*${NAME})`, 'g'),
  new RegExp(`\\bfor (${NAME}) in\\b`, 'g'),
  new RegExp(`\\$\\{?(${NAME})`, 'g'),
];

/** The program's own variables and functions in `text`. */
function ourNames(text) {
  const functions = new Set([...text.matchAll(new RegExp(`^[ \\t]*(${NAME})\\(\\) *\\{`, 'gm'))].map((m) => m[1]));
  const variables = new Set();
  for (const pattern of SETTING) {
    for (const m of text.matchAll(pattern)) for (const name of m[1].split(' ')) variables.add(name);
  }
  return { functions, variables };
}

function ownNames(text) {
  const { functions, variables } = ourNames(text);
  for (const name of functions) {
    if (variables.has(name)) throw new Error(`build-pod: ${name} is a function and a variable`);
  }
  // Each of our names is marked where it stands (\0name\0), then given its
  // short name in the order the marks first appear.
  const mark = (name) => (functions.has(name) || variables.has(name) ? `\0${name}\0` : name);
  let named = text
    .replace(new RegExp(`\\$(\\{?)(${NAME})`, 'g'), (_all, brace, name) => `$${brace}${mark(name)}`)
    .replace(new RegExp(`(^|[\\s;(){&|])(${NAME})=`, 'g'), (_all, before, name) => `${before}${mark(name)}=`)
    .replace(new RegExp(`\\bread ${READ_OPTIONS}((?:${NAME} )*${NAME})`, 'g'), (_all, options, names) => `read ${options}${names.split(' ').map(mark).join(' ')}`)
    .replace(new RegExp(`\\bfor (${NAME}) in\\b`, 'g'), (_all, name) => `for ${mark(name)} in`)
    // Bare names in arithmetic.
    .replace(/\$\(\(([^()]*)\)\)/g, (_all, body) => `$((${body.replace(new RegExp(`(?<![A-Za-z0-9_$\\0])${NAME}(?![A-Za-z0-9_\\0])`, 'g'), mark)}))`);
  // Functions: where defined, and where a command starts.
  for (const name of functions) {
    const word = new RegExp(`(?<![A-Za-z0-9_./$\\0-])${name}(?![A-Za-z0-9_.=\\0-])`, 'g');
    named = named.replace(word, (all, at, whole) => {
      const before = whole.slice(Math.max(0, at - 6), at);
      const commandStarts = at === 0 || /([\n;&|({}]|\b(?:then|do|else|if|while|until) |! |\) ?)$/.test(before);
      if (!commandStarts || !quoting(whole)(at)) throw new Error(`build-pod: the function ${name} is named where no command starts: ${whole.slice(at - 20, at + 20)}`);
      return mark(name);
    });
  }
  // Nothing set may be left unrenamed: a name of ours missed would be the
  // container's, and the environment's names (uppercase) are left alone but
  // for the two the program must set: LC_ALL (given back to the command)
  // and IFS (which no shell takes from the environment).
  const ANY = '\\0?[A-Za-z_][A-Za-z0-9_]*\\0?';
  const set = [new RegExp(`(?:^|[\\s;(){&|])(${ANY})=`, 'g'), new RegExp(`\\bread ${READ_OPTIONS}((?:${ANY} )*${ANY})`, 'g'), new RegExp(`\\bfor (${ANY}) in\\b`, 'g')];
  for (const pattern of set) {
    for (const m of named.matchAll(pattern)) {
      for (const name of m[m.length - 1].split(' ')) {
        if (!/^\0.*\0$/.test(name) && !THEIRS.has(name)) throw new Error(`build-pod: the program sets ${name}, which is not a name of its own`);
      }
    }
  }
  const order = [...new Set([...named.matchAll(/\0([a-z0-9_]+)\0/g)].map((m) => m[1]))];
  const short = new Map(order.map((name, i) => [name, PREFIX + letters(i)]));
  return named.replace(/\0([a-z0-9_]+)\0/g, (_all, name) => short.get(name));
}

/**
 * Rule 5: the script's first line exits with `status` when any of its
 * variables is set on entry, which only the container's environment can
 * do: the shell would export our value of it to the command, and a
 * variable we read before setting would start with the environment's.
 */
// The first line: a shell that took xtrace or verbose from its environment
// (bash's SHELLOPTS) would print our lines into the exec's stderr, which
// is the command's; the trace of a command inside braces goes where the
// braces' stderr does.
const QUIET = '{ set +vx;} 2>/dev/null';

function nameGuard(named, status) {
  const functions = new Set([...named.matchAll(/^(_K[a-z]+)\(\) *\{/gm)].map((m) => m[1]));
  const variables = [...new Set([...named.matchAll(/_K[a-z]+/g)].map((m) => m[0]))].filter((n) => !functions.has(n));
  if (!/^\d+$/.test(String(status))) throw new Error('build-pod: the table has no POD_NAME_TAKEN');
  return `${QUIET}\n[ -z "${variables.map((n) => `\${${n}+x}`).join('')}" ]||exit ${status}\n${named}`;
}

/** 0 → a, 25 → z, 26 → ba, ...: short names that never start with a digit. */
function letters(i) {
  let name = '';
  let n = i;
  do {
    name = String.fromCharCode(97 + (n % 26)) + name;
    n = Math.floor(n / 26);
  } while (n > 0);
  return name;
}

/** The compact script of step `step`; `table` is the core's lib/table.sh. */
function buildStep(step, table, read = (name) => fs.readFileSync(path.join(POD, name), 'utf8')) {
  const source = inline(read(`${step}.sh`), (name) => (name === TABLE ? table : read(name)));
  const taken = (table.match(/^POD_NAME_TAKEN=(\d+)$/m) || [])[1];
  return nameGuard(ownNames(compact(constants(source))), taken);
}

/** Every step's compact script: { start, look, ... }. */
function buildAll(table, read) {
  return Object.fromEntries(STEPS.map((step) => [step, buildStep(step, table, read)]));
}

function main() {
  const core = require(path.join(__dirname, '..', 'pkg', 'k8s_auth_preflight.js'));
  const table = core.podShellTable();
  const tableFile = path.join(POD, TABLE);
  const written = fs.existsSync(tableFile) ? fs.readFileSync(tableFile, 'utf8') : null;
  if (written !== table) {
    if (!process.argv.includes('--write')) {
      console.error(`build-pod: ${path.relative(process.cwd(), tableFile)} differs from the core's table (src/durable/pod_status.rs); run node scripts/build-pod.js --write`);
      process.exit(1);
    }
    fs.writeFileSync(tableFile, table);
  }
  const scripts = buildAll(table);
  const out = path.join(__dirname, '..', 'pkg', 'pod-program.js');
  fs.writeFileSync(
    out,
    `'use strict';\n// Built from pod/*.sh by scripts/build-pod.js: do not edit.\nmodule.exports = ${JSON.stringify(scripts, null, 2)};\n`,
  );
  const sizes = STEPS.map((s) => `${s} ${scripts[s].length}`).join(', ');
  console.log(`build-pod: pkg/pod-program.js (${sizes} bytes)`);
}

if (require.main === module) main();

module.exports = { STEPS, TABLE, POD, inline, ourNames, constants, compact, ownNames, nameGuard, letters, buildStep, buildAll };
