//! The names an attempt may have written, from the runner's `tar`'s
//! listing, and what is left of an attempt that was not accepted.
//!
//! An attempt that is cut, or whose bytes arrived different, may leave
//! files in the destination, some half written. The next attempt writes
//! again every name it carries, so those are made whole; a name the source
//! no longer holds when an attempt is accepted is not, and would stay
//! behind. Those names are the leftovers, removed after the accepted
//! attempt.
//!
//! The runner's `tar` lists each name as it packs it (into the pod: a
//! superset of what the pod may have unpacked) or as it unpacks it (out of
//! the pod), one a line, with `-v --quoting-style=escape` in the C locale:
//! a backslash, a newline and every byte that is not printable ASCII are
//! escaped (`\\`, `\n`, `\ooo`), and a folder ends in `/`.

/// The names one listing holds, as bytes relative to the copy's folder: a
/// leading `./` and a trailing `/` taken off. A line that is not whole
/// (the last, when the listing was cut) is left out, and so is a name
/// that could reach outside the folder (absolute, or with a `..` part):
/// the runner's tar writes no such name, and nothing outside is removed.
/// Sorted, each once.
pub fn names(listing: &[u8]) -> Vec<Vec<u8>> {
    let whole = match listing.iter().rposition(|&b| b == b'\n') {
        Some(end) => listing.get(..end).unwrap_or_default(),
        None => return Vec::new(),
    };
    let mut names: Vec<Vec<u8>> = whole
        .split(|&b| b == b'\n')
        .filter_map(|line| relative(&unescape(line)))
        .collect();
    names.sort_unstable();
    names.dedup();
    names
}

/// The names that earlier attempts (`earlier`) listed and the accepted
/// one (`accepted`) did not, deepest first (a folder after what it
/// holds).
pub fn leftovers(earlier: &[Vec<u8>], accepted: &[u8]) -> Vec<Vec<u8>> {
    let kept = names(accepted);
    let mut left: Vec<Vec<u8>> = earlier
        .iter()
        .flat_map(|listing| names(listing))
        .filter(|n| kept.binary_search(n).is_err())
        .collect();
    // A name sorts before every name under it: backwards, the deepest come
    // first.
    left.sort_unstable();
    left.reverse();
    left.dedup();
    left
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

    fn set(names: &[&[u8]]) -> Vec<Vec<u8>> {
        let mut names: Vec<Vec<u8>> = names.iter().map(|n| n.to_vec()).collect();
        names.sort();
        names
    }

    #[test]
    fn escaped_names_are_read_back_as_their_bytes() {
        // What GNU tar 1.34 printed for these names (LC_ALL=C).
        let listing = b"./a b\n./nl\\nx\n./t\\tab\n./back\\\\slash\n./\\303\\251\n./\\377\\376\nq?\"'\nsp dir/\nd/\nd/inner\n";
        assert_eq!(
            names(listing),
            set(&[
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
            ])
        );
    }

    #[test]
    fn a_line_not_whole_the_folder_itself_and_names_reaching_outside_are_left_out() {
        assert_eq!(
            names(b"./\n.\na\n/etc/passwd\n../x\nb/../../y\nc..d\nhalf"),
            set(&[b"a", b"c..d"])
        );
        assert_eq!(names(b"no newline at all"), set(&[]));
        assert_eq!(names(b""), set(&[]));
    }

    #[test]
    fn leftovers_are_what_earlier_attempts_listed_and_the_accepted_one_did_not_deepest_first() {
        let earlier = vec![
            b"a\ngone/\ngone/big\ngone/sub/\ngone/sub/f\nhalf\n".to_vec(),
            b"a\nlater\n".to_vec(),
        ];
        let accepted = b"a\n";
        assert_eq!(
            leftovers(&earlier, accepted),
            vec![
                b"later".to_vec(),
                b"half".to_vec(),
                b"gone/sub/f".to_vec(),
                b"gone/sub".to_vec(),
                b"gone/big".to_vec(),
                b"gone".to_vec()
            ]
        );
        assert_eq!(leftovers(&[], b"a\n"), Vec::<Vec<u8>>::new());
        assert_eq!(
            leftovers(&[b"a\n".to_vec()], b"./a\n"),
            Vec::<Vec<u8>>::new()
        );
    }
}
