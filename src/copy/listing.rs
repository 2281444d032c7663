//! The names an attempt may have written, from the runner's `tar`'s
//! listing.
//!
//! An attempt that is cut, or whose bytes arrived different, may leave
//! files in the destination, some half written, and links: a name the
//! source no longer holds by the next attempt would stay behind, and a link
//! where the next attempt brings a folder is written through by BusyBox's
//! tar. So before the next attempt, what this one may have written is
//! removed.
//!
//! The runner's `tar` lists each name as it packs it (into the pod) or as
//! it unpacks it (out of the pod), one a line, with `-R -v
//! --quoting-style=escape` in the C locale: `block <n>: ` and the name,
//! where a backslash, a newline and every byte that is not printable ASCII
//! are escaped (`\\`, `\n`, `\ooo`), and a folder ends in `/`. Into the
//! pod, a member whose header starts at or after the bytes sent never
//! reached it (the runner's tar packs on to the end, into nowhere, after a
//! cut), so it is not counted.

/// The names `listing` holds, as bytes relative to the copy's folder, each
/// once, deepest first (a folder after what it holds): a leading `./` and
/// a trailing `/` taken off; with `sent`, only those whose header starts
/// before that many bytes. A line that is not whole (the last, when the
/// listing was cut) is left out, and so is a name that could reach outside
/// the folder (absolute, or with a `..` part): the runner's tar writes no
/// such name, and nothing outside is removed.
pub fn written(listing: &[u8], sent: Option<u64>) -> Vec<Vec<u8>> {
    let whole = match listing.iter().rposition(|&b| b == b'\n') {
        Some(end) => listing.get(..end).unwrap_or_default(),
        None => return Vec::new(),
    };
    let mut names: Vec<Vec<u8>> = whole
        .split(|&b| b == b'\n')
        .filter_map(|line| {
            let (block, name) = block_of(line);
            let reached = match (sent, block) {
                (Some(sent), Some(block)) => block.saturating_mul(512) < sent,
                _ => true,
            };
            reached.then(|| relative(&unescape(name))).flatten()
        })
        .collect();
    // A name sorts before every name under it: backwards, the deepest come
    // first.
    names.sort_unstable();
    names.reverse();
    names.dedup();
    names
}

/// `block <n>: <name>` as the block and the name; a line without it is all
/// name, its block unknown.
fn block_of(line: &[u8]) -> (Option<u64>, &[u8]) {
    let Some(rest) = line.strip_prefix(b"block ") else {
        return (None, line);
    };
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    let (number, name) = rest.split_at(digits);
    match (
        name.strip_prefix(b": "),
        std::str::from_utf8(number)
            .ok()
            .and_then(|n| n.parse().ok()),
    ) {
        (Some(name), Some(block)) => (Some(block), name),
        _ => (None, line),
    }
}

/// One escaped line as its bytes.
fn unescape(line: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(line.len());
    let mut rest = line.iter().copied();
    while let Some(b) = rest.next() {
        if b != b'\\' {
            out.push(b);
            continue;
        }
        let Some(next) = rest.next() else {
            out.push(b'\\');
            break;
        };
        let plain = match next {
            b'a' => 7,
            b'b' => 8,
            b't' => b'\t',
            b'n' => b'\n',
            b'v' => 11,
            b'f' => 12,
            b'r' => b'\r',
            b'0'..=b'7' => {
                // Always three digits.
                let digits = [
                    next,
                    rest.next().unwrap_or(b'0'),
                    rest.next().unwrap_or(b'0'),
                ];
                digits
                    .iter()
                    .fold(0u32, |v, d| v * 8 + u32::from(d.wrapping_sub(b'0') & 7))
                    as u8
            }
            other => other,
        };
        out.push(plain);
    }
    out
}

/// `name` without a leading `./` and a trailing `/`, or `None` when
/// nothing is left or it could reach outside the folder.
fn relative(name: &[u8]) -> Option<Vec<u8>> {
    let mut name = name;
    while let Some(rest) = name.strip_prefix(b"./") {
        name = rest;
    }
    while let Some(rest) = name.strip_suffix(b"/") {
        name = rest;
    }
    let outside =
        name.first() == Some(&b'/') || name.split(|&b| b == b'/').any(|part| part == b"..");
    if name.is_empty() || name == b"." || outside {
        return None;
    }
    Some(name.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    fn deepest_first(names: &[&[u8]]) -> Vec<Vec<u8>> {
        let mut names: Vec<Vec<u8>> = names.iter().map(|n| n.to_vec()).collect();
        names.sort();
        names.reverse();
        names
    }

    #[test]
    fn escaped_names_are_read_back_as_their_bytes() {
        // What GNU tar 1.34 printed for these names (LC_ALL=C, -R).
        let listing = b"block 0: ./a b\nblock 1: ./nl\\nx\nblock 2: ./t\\tab\nblock 3: ./back\\\\slash\nblock 4: ./\\303\\251\nblock 5: ./\\377\\376\nblock 6: q?\"'\nblock 7: sp dir/\nblock 8: d/\nblock 9: d/inner\nno block: plain\n";
        assert_eq!(
            written(listing, None),
            deepest_first(&[
                b"a b",
                b"nl\nx",
                b"t\tab",
                b"back\\slash",
                "\u{e9}".as_bytes(),
                &[0xff, 0xfe],
                b"q?\"'",
                b"sp dir",
                b"d",
                b"d/inner",
                b"no block: plain",
            ])
        );
    }

    #[test]
    fn a_line_not_whole_the_folder_itself_and_names_reaching_outside_are_left_out() {
        assert_eq!(
            written(b"block 0: ./\nblock 1: .\nblock 2: a\nblock 3: /etc/passwd\nblock 4: ../x\nblock 5: b/../../y\nblock 6: c..d\nblock 7: half", None),
            deepest_first(&[b"a", b"c..d"])
        );
        assert_eq!(written(b"no newline at all", None), Vec::<Vec<u8>>::new());
        assert_eq!(written(b"", None), Vec::<Vec<u8>>::new());
    }

    #[test]
    fn into_the_pod_only_members_whose_header_was_sent_count_deepest_first_each_once() {
        let listing = b"block 0: ./gone/\nblock 1: ./gone/big\nblock 20000: ./gone/sub/\nblock 20001: ./gone/sub/f\nblock 20002: ./later\nblock 1: ./gone/big\n";
        assert_eq!(
            written(listing, Some(20_000 * 512 + 1)),
            deepest_first(&[b"gone/sub", b"gone/big", b"gone"])
        );
        assert_eq!(written(listing, Some(512)), deepest_first(&[b"gone"]));
        assert_eq!(written(listing, None).len(), 5);
    }
}
