//! Event names with a control character are refused at record time by every
//! recording call, as agent names are, and nothing is recorded.

use telering_core::{Category, NameError};
use telering_std::Telemetry;

const HOSTILE: [(&str, usize, char); 4] = [
    ("x\nValue: 9", 1, '\n'),
    ("t\u{1b}]0;pwned\u{7}", 1, '\u{1b}'),
    ("cr\r", 2, '\r'),
    ("a\u{202e}b", 1, '\u{202e}'),
];

#[test]
fn every_recording_call_refuses_a_name_with_a_control_character() {
    let telemetry = Telemetry::builder("control-names")
        .enabled(true)
        .exporter("nop")
        .build()
        .unwrap();
    let recorder = telemetry.recorder();
    let backend = telemetry.backend("UCX");
    for (name, at, ch) in HOSTILE {
        let refused = Err(NameError::ControlCharacter { at, ch });
        assert_eq!(telemetry.record(Category::Custom, name, 1), refused);
        assert_eq!(recorder.record(Category::Custom, name, 1), refused);
        assert_eq!(backend.add_telemetry_event(name, 1), refused);
        assert_eq!(
            telemetry.custom_event(Category::Custom, name).err(),
            refused.err()
        );
    }
    telemetry.flush().unwrap();
    assert_eq!(telemetry.stats().events_recorded, 0);
}
