//! Byte-level mutations, in the spirit of libFuzzer's and AFL's havoc
//! stage: flips, interesting bytes, insertions and deletions, copies inside
//! the input, splices with another input and dictionary tokens.

use crate::rng::Rng;

/// Bytes that change how text formats are read: delimiters, quotes,
/// escapes, controls, and the edges of UTF-8 and integer ranges.
const INTERESTING: &[u8] = &[
    0x00, 0x01, 0x07, 0x09, 0x0a, 0x0d, 0x1b, 0x20, b'"', b'#', b'$', b'%', b'&', b'\'', b'*',
    b',', b'-', b'.', b'/', b'0', b'9', b':', b';', b'<', b'=', b'>', b'?', b'@', b'[', b'\\',
    b']', b'{', b'|', b'}', b'~', 0x7f, 0x80, 0xbf, 0xc0, 0xe2, 0xef, 0xf0, 0xff,
];

/// Text that grows inputs in ways byte flips rarely reach.
const GENERIC_TOKENS: &[&[u8]] = &[
    b"\n",
    b"\r\n",
    b"\t",
    b"  ",
    b"-1",
    b"0",
    b"4294967296",
    b"18446744073709551616",
    b"99999999999999999999",
    b"NaN",
    b"1e999",
    b"\xef\xbb\xbf",
    b"\xe2\x80\xae",
    b"\\",
];

/// Mutates `input` in place with one to eight stacked operations, never
/// growing it past `max_len`. `other` is another input to splice from and
/// `dictionary` the target's own tokens.
pub fn mutate(
    input: &mut Vec<u8>,
    other: &[u8],
    dictionary: &[&[u8]],
    max_len: usize,
    rng: &mut Rng,
) {
    let rounds = 1 + rng.below(8);
    for _ in 0..rounds {
        apply(input, other, dictionary, rng);
        input.truncate(max_len);
    }
}

fn apply(input: &mut Vec<u8>, other: &[u8], dictionary: &[&[u8]], rng: &mut Rng) {
    let len = input.len();
    match rng.below(11) {
        0 if len > 0 => {
            let at = rng.below(len);
            input[at] ^= 1 << rng.below(8);
        }
        1 if len > 0 => {
            let at = rng.below(len);
            input[at] = *rng.pick(INTERESTING).unwrap_or(&0);
        }
        2 => {
            let at = rng.below(len + 1);
            let byte = *rng.pick(INTERESTING).unwrap_or(&0);
            input.insert(at, byte);
        }
        3 if len > 0 => {
            let start = rng.below(len);
            let end = (start + 1 + rng.below(16.min(len - start))).min(len);
            input.drain(start..end);
        }
        4 if len > 0 => {
            // Repeat a piece: deep nesting, long lines, many entries.
            let start = rng.below(len);
            let end = (start + 1 + rng.below(64.min(len - start))).min(len);
            let piece = input[start..end].to_vec();
            let most = if rng.one_in(16) { 256 } else { 4 };
            let times = 1 + rng.below(most);
            let at = rng.below(len + 1);
            let repeated: Vec<u8> = piece
                .iter()
                .copied()
                .cycle()
                .take(piece.len() * times)
                .collect();
            input.splice(at..at, repeated);
        }
        5 if !other.is_empty() => {
            // Splice: the head of this input and the tail of another.
            let cut = rng.below(len + 1);
            let from = rng.below(other.len());
            input.truncate(cut);
            input.extend_from_slice(&other[from..]);
        }
        6 | 7 if !dictionary.is_empty() => {
            let token = *rng.pick(dictionary).unwrap_or(&&b""[..]);
            let at = rng.below(len + 1);
            input.splice(at..at, token.iter().copied());
        }
        8 => {
            let token = *rng.pick(GENERIC_TOKENS).unwrap_or(&&b""[..]);
            let at = rng.below(len + 1);
            input.splice(at..at, token.iter().copied());
        }
        9 if len > 1 => {
            // Truncate: what a short read or a cut capture gives.
            let at = rng.below(len);
            input.truncate(at);
        }
        10 if len > 0 => {
            // Replace a line with a line of another input.
            let at = rng.below(len);
            let line_start = input[..at]
                .iter()
                .rposition(|&b| b == b'\n')
                .map_or(0, |p| p + 1);
            let line_end = input[at..]
                .iter()
                .position(|&b| b == b'\n')
                .map_or(len, |p| at + p);
            let lines: Vec<&[u8]> = other.split(|&b| b == b'\n').collect();
            if let Some(line) = rng.pick(&lines) {
                input.splice(line_start..line_end, line.iter().copied());
            }
        }
        _ => {
            let at = rng.below(len + 1);
            input.insert(at, (rng.next_u64() & 0xff) as u8);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mutations_respect_the_length_cap_and_change_inputs() {
        let mut rng = Rng::new(3);
        let mut changed = 0;
        for _ in 0..2000 {
            let mut input = b"apiVersion: v1\nkind: Pod\n".to_vec();
            mutate(
                &mut input,
                b"metadata:\n  name: x\n",
                &[b"spec:"],
                40,
                &mut rng,
            );
            assert!(input.len() <= 40);
            changed += usize::from(input != b"apiVersion: v1\nkind: Pod\n");
        }
        assert!(changed > 1800, "{changed} of 2000 mutants differ");
    }

    #[test]
    fn empty_inputs_grow() {
        let mut rng = Rng::new(5);
        let grown = (0..100).any(|_| {
            let mut input = Vec::new();
            mutate(&mut input, b"", &[], 64, &mut rng);
            !input.is_empty()
        });
        assert!(grown);
    }
}
