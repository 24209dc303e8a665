//! Unsigned LEB128 (7 bits per byte, low group first, high bit set on every byte but
//! the last) and the zigzag map that makes small negative numbers small.

/// Longest LEB128 encoding of a `u64`: ⌈64 / 7⌉ bytes.
pub const MAX_VARINT_LEN: usize = 10;

/// Writes `value` as LEB128 into `out` and returns the bytes used, or `None` if `out`
/// is too short (nothing useful is left in `out` then).
pub fn put(value: u64, out: &mut [u8]) -> Option<usize> {
    let mut len = 0;
    let mut fits = true;
    each_byte(value, |byte| {
        match out.get_mut(len) {
            Some(slot) => *slot = byte,
            None => fits = false,
        }
        len += 1;
    });
    fits.then_some(len)
}

/// Hands the bytes of `value`'s LEB128 encoding to `put`, first to last.
pub(crate) fn each_byte(value: u64, mut put: impl FnMut(u8)) {
    let mut rest = value;
    loop {
        let low = (rest & 0x7F) as u8;
        rest >>= 7;
        if rest == 0 {
            return put(low);
        }
        put(low | 0x80);
    }
}

/// Bytes `value` takes as LEB128.
pub const fn len(value: u64) -> usize {
    let bits = 64 - value.leading_zeros() as usize;
    if bits == 0 { 1 } else { bits.div_ceil(7) }
}

/// Reads one LEB128 value from the front of `input`, returning it and the bytes it
/// took; `None` when the input ends inside it or it does not fit in 64 bits.
pub fn get(input: &[u8]) -> Option<(u64, usize)> {
    let mut value = 0u64;
    for (i, &byte) in input.iter().enumerate().take(MAX_VARINT_LEN) {
        let group = u64::from(byte & 0x7F);
        // The tenth byte may only carry the top bit of a u64.
        if i == MAX_VARINT_LEN - 1 && group > 1 {
            return None;
        }
        value |= group << (7 * i);
        if byte & 0x80 == 0 {
            return Some((value, i + 1));
        }
    }
    None
}

/// Zigzag: 0, −1, 1, −2, 2 … become 0, 1, 2, 3, 4 …
pub const fn zigzag(value: i64) -> u64 {
    ((value << 1) ^ (value >> 63)) as u64
}

/// The inverse of [`zigzag`].
pub const fn unzigzag(value: u64) -> i64 {
    ((value >> 1) as i64) ^ -((value & 1) as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_encodings_and_lengths() {
        let mut out = [0u8; MAX_VARINT_LEN];
        for (value, bytes) in [
            (0u64, &[0x00][..]),
            (127, &[0x7F]),
            (128, &[0x80, 0x01]),
            (300, &[0xAC, 0x02]),
            (
                u64::MAX,
                &[0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01],
            ),
        ] {
            let n = put(value, &mut out).unwrap();
            assert_eq!(&out[..n], bytes, "{value}");
            assert_eq!(len(value), n);
            assert_eq!(get(bytes), Some((value, n)));
        }
    }

    #[test]
    fn overlong_or_cut_varints_are_refused() {
        assert_eq!(get(&[0x80]), None);
        assert_eq!(get(&[]), None);
        assert_eq!(
            get(&[0xFF; 9].iter().copied().chain([0x02]).collect::<Vec<_>>()),
            None
        );
        assert_eq!(get(&[0xFF; 11]), None);
        assert_eq!(put(300, &mut [0u8; 1]), None);
    }

    #[test]
    fn zigzag_round_trips_extremes() {
        for v in [0i64, -1, 1, -2, i64::MIN, i64::MAX, 123_456] {
            assert_eq!(unzigzag(zigzag(v)), v);
        }
        assert_eq!(zigzag(-1), 1);
        assert_eq!(zigzag(1), 2);
    }
}
