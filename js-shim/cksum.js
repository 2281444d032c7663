'use strict';
// POSIX `cksum`'s CRC: CRC-32 with the polynomial 0x04C11DB7, most
// significant bit first, over the bytes and then their count (its least
// significant byte first, as few bytes as it takes), complemented. A pod
// with coreutils checks a copy's bytes with it (pod/lib/copy-check.sh), so
// the runner computes it too. Sixteen bytes a step (slicing by sixteen):
// about 1.2 GB/s on the 2-core machine the benchmarks ran on, where eight
// a step made 0.7 GB/s.

// Sixteen tables: table k carries a byte k + 1 places from the end.
const TABLES = (() => {
  const tables = Array.from({ length: 16 }, () => new Int32Array(256));
  for (let i = 0; i < 256; i++) {
    let c = i << 24;
    for (let k = 0; k < 8; k++) c = c & 0x80000000 ? (c << 1) ^ 0x04c11db7 : c << 1;
    tables[0][i] = c;
  }
  for (let i = 0; i < 256; i++) {
    for (let t = 1; t < 16; t++) tables[t][i] = (tables[t - 1][i] << 8) ^ tables[0][(tables[t - 1][i] >>> 24) & 255];
  }
  return tables;
})();
const [t0, t1, t2, t3, t4, t5, t6, t7, t8, t9, t10, t11, t12, t13, t14, t15] = TABLES;

/** The CRC so far, `crc`, carried over the bytes of `b`. */
function update(crc, b) {
  let i = 0;
  const whole = b.length - 15;
  for (; i < whole; i += 16) {
    const a = crc ^ ((b[i] << 24) | (b[i + 1] << 16) | (b[i + 2] << 8) | b[i + 3]);
    crc =
      t15[a >>> 24] ^ t14[(a >>> 16) & 255] ^ t13[(a >>> 8) & 255] ^ t12[a & 255] ^
      t11[b[i + 4]] ^ t10[b[i + 5]] ^ t9[b[i + 6]] ^ t8[b[i + 7]] ^
      t7[b[i + 8]] ^ t6[b[i + 9]] ^ t5[b[i + 10]] ^ t4[b[i + 11]] ^
      t3[b[i + 12]] ^ t2[b[i + 13]] ^ t1[b[i + 14]] ^ t0[b[i + 15]];
  }
  for (; i < b.length; i++) crc = (crc << 8) ^ t0[((crc >>> 24) ^ b[i]) & 255];
  return crc;
}

/** What `cksum` prints for `length` bytes whose CRC so far is `crc`. */
function finish(crc, length) {
  let n = length;
  while (n > 0) {
    crc = (crc << 8) ^ t0[((crc >>> 24) ^ n % 256) & 255];
    n = Math.floor(n / 256);
  }
  return ~crc >>> 0;
}

module.exports = { update, finish };
