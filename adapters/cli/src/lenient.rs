//! Records shown although they do not validate: one warning per kind of problem, and
//! a count at the end.
//!
//! NIXL's own writer stores events telering's strict decoder refuses (an empty name,
//! category 8, a 31-byte name cut inside a UTF-8 character; in versions 3 and 4 a
//! type number no release defines). `read` and `tail` print them as they are (see
//! [`crate::output::write_record`]) and say so on stderr: the first record of each
//! kind is named with its slot, later ones are only counted, and the run ends with
//! one line giving the counts.

use crate::output::shown_path;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use telering_core::text::Escaped;
use telering_shm::{RecordProblem, RingRecord};

/// What a problem is, in the words of this output: a name's bytes that are not UTF-8
/// are escaped in text and replaced in JSON (see [`crate::output::write_record`]).
fn describe(problem: RecordProblem) -> &'static str {
    match problem {
        RecordProblem::NameNotUtf8 => {
            "a name that is not UTF-8 (invalid bytes shown as \\xNN, in JSON as U+FFFD)"
        }
        other => other.describe(),
    }
}

/// Counts the problems of the records shown, warning once per kind.
#[derive(Debug, Default)]
pub struct LossyDisplay {
    by_kind: BTreeMap<RecordProblem, u64>,
    records: u64,
}

impl LossyDisplay {
    /// Notes `record` (about to be shown); warns on `err` at the first record of each
    /// kind of problem. Returns whether the record has any.
    pub fn note(&mut self, path: &Path, record: &RingRecord, err: &mut dyn Write) -> bool {
        let problems = record.problems();
        if problems.is_empty() {
            return false;
        }
        self.records += 1;
        for problem in problems {
            let seen = self.by_kind.entry(problem).or_insert(0);
            *seen += 1;
            if *seen == 1 {
                let at = match record.slot {
                    Some(slot) => format!("slot {slot}"),
                    None => "an observed slot".to_owned(),
                };
                // stderr is best-effort: a closed stderr must not stop the output.
                let _ = writeln!(
                    err,
                    "telering: {}: {at} holds {} (category {}, name \"{}\"); shown as it is, and further records like it are counted",
                    shown_path(path),
                    describe(problem),
                    record.category,
                    Escaped::bytes(record.name_bytes()),
                );
            }
        }
        true
    }

    /// Records shown that had at least one problem.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Writes the closing count, if there was anything to count.
    pub fn finish(&self, path: &Path, err: &mut dyn Write) {
        if self.records == 0 {
            return;
        }
        let kinds: Vec<String> = self
            .by_kind
            .iter()
            .map(|(kind, n)| format!("{n} with {}", describe(*kind)))
            .collect();
        let _ = writeln!(
            err,
            "telering: {}: {} shown as {} although {} not validate: {}",
            shown_path(path),
            if self.records == 1 {
                "1 record was".to_string()
            } else {
                format!("{} records were", self.records)
            },
            if self.records == 1 {
                "it is"
            } else {
                "they are"
            },
            if self.records == 1 {
                "it does"
            } else {
                "they do"
            },
            kinds.join("; ")
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use telering_shm::Generation;

    fn v1(category: i32, name: &[u8]) -> RingRecord {
        let mut slot = [0u8; 56];
        slot[8..12].copy_from_slice(&category.to_le_bytes());
        slot[12..12 + name.len()].copy_from_slice(name);
        RingRecord {
            slot: Some(3),
            ..Generation::V1.decode(&slot)
        }
    }

    #[test]
    fn each_kind_is_warned_once_and_all_are_counted() {
        let mut display = LossyDisplay::default();
        let mut err = Vec::new();
        let path = Path::new("ring");
        assert!(!display.note(path, &v1(1, b"ok"), &mut err));
        for _ in 0..3 {
            assert!(display.note(path, &v1(8, b"x"), &mut err));
            assert!(display.note(path, &v1(1, b""), &mut err));
        }
        let warnings = String::from_utf8(err.clone()).unwrap();
        assert_eq!(warnings.lines().count(), 2, "{warnings}");
        assert!(
            warnings.contains("slot 3 holds a category outside 0 to 7"),
            "{warnings}"
        );
        assert!(
            warnings.contains("slot 3 holds an empty name"),
            "{warnings}"
        );
        err.clear();
        display.finish(path, &mut err);
        let end = String::from_utf8(err).unwrap();
        assert!(end.contains("6 records were shown"), "{end}");
        assert!(end.contains("3 with a category outside 0 to 7"), "{end}");
        assert!(end.contains("3 with an empty name"), "{end}");
    }

    #[test]
    fn one_record_is_counted_in_the_singular() {
        let path = Path::new("ring");
        let mut display = LossyDisplay::default();
        let mut err = Vec::new();
        assert!(display.note(path, &v1(1, b""), &mut err));
        err.clear();
        display.finish(path, &mut err);
        let end = String::from_utf8(err).unwrap();
        assert!(
            end.contains("1 record was shown as it is although it does not validate"),
            "{end}"
        );
    }
}
