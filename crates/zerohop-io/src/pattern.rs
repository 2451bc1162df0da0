//! The deterministic per-offset data pattern written by `zerohop bench
//! prepare` and checked by `--verify`.
//!
//! Every 8-byte word at file offset `8 * n` holds `mix(n)` in little-endian
//! order, so any block read from any offset can be checked on its own without
//! knowing which file it came from or how it was written.

/// A constant mixed into every word so that a file of zeros or of another
/// tool's pattern never verifies.
const SALT: u64 = 0x7a65_726f_686f_7021; // "zerohop!"

/// SplitMix64's finaliser: a cheap bijective mix with good avalanche.
#[inline]
fn mix(word_index: u64) -> u64 {
    let mut z = word_index ^ SALT;
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The expected byte at `offset`.
#[inline]
fn byte_at(offset: u64) -> u8 {
    mix(offset / 8).to_le_bytes()[(offset % 8) as usize]
}

/// Fills `buf` with the pattern for the file range starting at `offset`.
pub fn fill(buf: &mut [u8], offset: u64) {
    let head = (offset.next_multiple_of(8) - offset).min(buf.len() as u64) as usize;
    let (head_bytes, rest) = buf.split_at_mut(head);
    for (i, byte) in head_bytes.iter_mut().enumerate() {
        *byte = byte_at(offset + i as u64);
    }
    let aligned = offset + head as u64;
    let tail_start = aligned + (rest.len() / 8 * 8) as u64;
    let mut words = rest.chunks_exact_mut(8);
    for (i, word) in words.by_ref().enumerate() {
        word.copy_from_slice(&mix(aligned / 8 + i as u64).to_le_bytes());
    }
    for (i, byte) in words.into_remainder().iter_mut().enumerate() {
        *byte = byte_at(tail_start + i as u64);
    }
}

/// Checks `buf` against the pattern for the range starting at `offset`.
/// Returns the file offset of the first byte that differs.
pub fn first_mismatch(buf: &[u8], offset: u64) -> Option<u64> {
    let head = (offset.next_multiple_of(8) - offset).min(buf.len() as u64) as usize;
    let (head_bytes, rest) = buf.split_at(head);
    for (i, &byte) in head_bytes.iter().enumerate() {
        if byte != byte_at(offset + i as u64) {
            return Some(offset + i as u64);
        }
    }
    let aligned = offset + head as u64;
    let words = rest.chunks_exact(8);
    let tail = words.remainder();
    for (i, word) in words.enumerate() {
        let expected = mix(aligned / 8 + i as u64).to_le_bytes();
        if word != expected {
            let lane = word
                .iter()
                .zip(expected)
                .position(|(a, b)| *a != b)
                .unwrap_or(0);
            return Some(aligned + (i * 8 + lane) as u64);
        }
    }
    let tail_start = aligned + (rest.len() / 8 * 8) as u64;
    tail.iter()
        .enumerate()
        .find(|(i, byte)| **byte != byte_at(tail_start + *i as u64))
        .map(|(i, _)| tail_start + i as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_pattern_is_not_trivial() {
        let mut buf = vec![0u8; 4096];
        fill(&mut buf, 0);
        assert!(buf.iter().any(|&b| b != 0));
        assert_ne!(buf[..8], buf[8..16]);
        assert_eq!(first_mismatch(&vec![0u8; 4096], 0), Some(0));
    }

    proptest! {
        #[test]
        fn a_filled_range_verifies_and_matches_the_whole_file(offset in 0u64..100_000, len in 0usize..300) {
            let mut whole = vec![0u8; offset as usize + len];
            fill(&mut whole, 0);
            let mut part = vec![0u8; len];
            fill(&mut part, offset);
            prop_assert_eq!(&part[..], &whole[offset as usize..]);
            prop_assert_eq!(first_mismatch(&part, offset), None);
        }

        #[test]
        fn any_flipped_byte_is_found_at_its_offset(offset in 0u64..100_000, len in 1usize..300, at in 0usize..300, bit in 0u8..8) {
            let at = at % len;
            let mut buf = vec![0u8; len];
            fill(&mut buf, offset);
            buf[at] ^= 1 << bit;
            prop_assert_eq!(first_mismatch(&buf, offset), Some(offset + at as u64));
        }
    }
}
