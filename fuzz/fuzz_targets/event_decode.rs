//! Arbitrary bytes fed to every core decoder: an event record, a category, a name
//! field and a ring header. Each returns `Ok` or a typed error — never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use telering_core::ring::HeaderInfo;
use telering_core::{Category, Event, EventName};

fuzz_target!(|data: &[u8]| {
    if let Ok(event) = Event::from_wire_bytes(data) {
        // A decoded event re-encodes to the same bytes (stamp field aside).
        let mut expected = [0u8; 56];
        expected.copy_from_slice(data);
        expected[44..48].fill(0);
        assert_eq!(event.to_wire_bytes(), expected);
        assert!(event.category().is_ok() && event.name().is_ok());
    }
    if data.len() >= 4 {
        let raw = i32::from_le_bytes([data[0], data[1], data[2], data[3]]);
        if let Ok(c) = Category::try_from(raw) {
            assert_eq!(c as i32, raw);
        }
    }
    if data.len() >= 32 {
        let mut field = [0u8; 32];
        field.copy_from_slice(&data[..32]);
        if let Ok(name) = EventName::from_field(&field) {
            let len = name.as_bytes().len();
            assert_eq!(name.as_bytes(), &field[..len]);
            assert_eq!(field[len], 0);
        }
    }
    let _ = HeaderInfo::parse(data, data.len());
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = EventName::new(text);
        let _ = EventName::new_truncated(text);
        let _ = telering_core::allowlist::fnmatch(text, "agent_tx_bytes");
        // The list classified once, borrowed or holding its text, answers as the
        // patterns do by definition (any trimmed, non-empty one matching, or none).
        let list = telering_core::Allowlist::new(text);
        let owning = telering_core::OwningAllowlist::new(String::from(text));
        for name in [text, "agent_tx_bytes", text.trim()] {
            let by_definition = list.patterns().next().is_none()
                || list
                    .patterns()
                    .any(|p| telering_core::allowlist::fnmatch(p, name));
            assert_eq!(list.allows(name), by_definition);
            assert_eq!(owning.allows(name), by_definition);
        }
    }
});
