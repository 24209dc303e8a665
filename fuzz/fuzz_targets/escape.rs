//! Arbitrary bytes through `telering_core::text::Escaped`, the one escaper of text
//! telering did not create. The output holds no character a terminal or a log acts
//! on, and undoing the escapes gives back exactly the input bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use telering_core::text::{Escaped, first_unsafe_char, is_unsafe_char};

fuzz_target!(|data: &[u8]| {
    let shown = Escaped::bytes(data).to_string();
    assert!(
        !shown.chars().any(|c| c.is_control() || is_unsafe_char(c)),
        "{shown:?}"
    );
    assert_eq!(unescape(&shown), data, "{shown:?}");
    if let Ok(text) = std::str::from_utf8(data) {
        assert_eq!(Escaped::new(text).to_string(), shown);
        // The `const` scanner agrees with the standard library's decoder.
        assert_eq!(
            first_unsafe_char(text),
            text.char_indices().find(|&(_, c)| is_unsafe_char(c))
        );
    }
});

/// The bytes `shown` stands for: the escaper's rules read backwards.
fn unescape(shown: &str) -> Vec<u8> {
    let mut out = Vec::new();
    let mut chars = shown.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            let mut buf = [0u8; 4];
            out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            continue;
        }
        match chars.next() {
            Some('\\') => out.push(b'\\'),
            Some('t') => out.push(b'\t'),
            Some('n') => out.push(b'\n'),
            Some('r') => out.push(b'\r'),
            Some('x') => {
                let hex: String = chars.by_ref().take(2).collect();
                out.push(u8::from_str_radix(&hex, 16).expect("two hex digits after \\x"));
            }
            Some('u') => {
                assert_eq!(chars.next(), Some('{'), "`{{` after \\u in {shown:?}");
                let hex: String = chars.by_ref().take_while(|&c| c != '}').collect();
                let code = u32::from_str_radix(&hex, 16).expect("hex code point");
                let c = char::from_u32(code).expect("a character");
                assert!(is_unsafe_char(c), "{c:?} escaped although it is printable");
                let mut buf = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            }
            other => panic!("unknown escape \\{other:?} in {shown:?}"),
        }
    }
    out
}
