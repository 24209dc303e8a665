//! What both Rust readers offer ([`RingReader`]), and the note a read keeps of the
//! events that do not validate ([`Lenient`]): shared by the readers' Python classes
//! (`reader`) and their bulk reads for NumPy (`arrays`).

use crate::event::PyEvent;
use telering_shm::{
    DrainingReader, ObserverReader, RecordProblem, RingFileInfo, RingRecord, ShmError,
};

/// What both Rust readers offer.
pub(crate) trait RingReader: Send {
    /// The next record, unvalidated.
    fn next_record(&mut self) -> Result<Option<RingRecord>, ShmError>;
    /// Up to `max` records, unvalidated.
    fn batch(&mut self, max: usize, each: &mut dyn FnMut(RingRecord)) -> Result<usize, ShmError>;
    /// What the file holds.
    fn file_info(&self) -> RingFileInfo;
}

impl RingReader for DrainingReader {
    fn next_record(&mut self) -> Result<Option<RingRecord>, ShmError> {
        self.pop_record()
    }
    fn batch(&mut self, max: usize, each: &mut dyn FnMut(RingRecord)) -> Result<usize, ShmError> {
        self.read_records(max, each)
    }
    fn file_info(&self) -> RingFileInfo {
        self.info()
    }
}

impl RingReader for ObserverReader {
    fn next_record(&mut self) -> Result<Option<RingRecord>, ShmError> {
        self.poll_record()
    }
    fn batch(&mut self, max: usize, each: &mut dyn FnMut(RingRecord)) -> Result<usize, ShmError> {
        self.read_records(max, each)
    }
    fn file_info(&self) -> RingFileInfo {
        self.info()
    }
}

/// The events of one read that do not validate: how many, and the first of each
/// kind of problem, described.
#[derive(Debug, Default)]
pub(crate) struct Lenient {
    pub(crate) count: u64,
    pub(crate) first: Vec<(RecordProblem, String)>,
}

impl Lenient {
    /// The Python event of `record`, noting its problems.
    pub(crate) fn event(&mut self, record: &RingRecord) -> PyEvent {
        let event = PyEvent::from_record(record);
        if event.lenient() {
            self.note(record);
        }
        event
    }

    /// Notes the problems of `record`, which has some.
    pub(crate) fn note(&mut self, record: &RingRecord) {
        self.count += 1;
        for problem in record.problems() {
            if self.first.iter().all(|(p, _)| *p != problem) {
                let at = match record.slot {
                    Some(slot) => format!("slot {slot}"),
                    None => "an observed slot".to_owned(),
                };
                self.first.push((
                    problem,
                    format!(
                        "{at} holds {} (category {}, name {:?})",
                        problem.describe(),
                        record.category,
                        record.name_lossy()
                    ),
                ));
            }
        }
    }
}
