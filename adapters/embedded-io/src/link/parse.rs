//! Parsing an intact version-2 body into its parts (see `docs/LINK.md`). No
//! allocation: the parts borrow from the body.

use super::varint;
use super::wire::{
    CRC_LEN, HEADER_LEN, Hello, KIND_CLOCK, KIND_EVENTS, KIND_HELLO, KIND_NAMES, MAX_AGENT_LEN,
    MAX_BODY_V2, MAX_VERSION_LEN, TAG_INLINE,
};
use crate::frame::FrameErrorKind;
use telering_core::Category;
use telering_core::event::NAME_MAX_LEN;

/// The parts of an intact version-2 body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Body<'a> {
    Hello {
        seq: u32,
        hello: Hello<'a>,
    },
    Names {
        seq: u32,
        entries: &'a [u8],
    },
    Events {
        seq: u32,
        first_event: u64,
        base_ticks: u64,
        events: &'a [u8],
    },
    Clock {
        seq: u32,
        ticks: u64,
    },
}

fn malformed(field: &'static str) -> FrameErrorKind {
    FrameErrorKind::Malformed { field }
}

fn varint_at(payload: &[u8], at: &mut usize, field: &'static str) -> Result<u64, FrameErrorKind> {
    let (value, n) = varint::get(payload.get(*at..).unwrap_or(&[])).ok_or(malformed(field))?;
    *at += n;
    Ok(value)
}

fn text_at<'a>(
    payload: &'a [u8],
    at: &mut usize,
    max: usize,
    field: &'static str,
) -> Result<&'a str, FrameErrorKind> {
    let len = usize::from(*payload.get(*at).ok_or(malformed(field))?);
    let bytes = payload
        .get(*at + 1..*at + 1 + len)
        .ok_or(malformed(field))?;
    if len == 0 || len > max || bytes.contains(&0) {
        return Err(malformed(field));
    }
    *at += 1 + len;
    core::str::from_utf8(bytes).map_err(|_| malformed(field))
}

/// Parses an intact (CRC-checked) version-2 body, CRC included.
pub(crate) fn parse(body: &[u8]) -> Result<Body<'_>, FrameErrorKind> {
    if body.len() > MAX_BODY_V2 {
        return Err(FrameErrorKind::WrongLength { len: body.len() });
    }
    if body.len() < HEADER_LEN + CRC_LEN {
        return Err(FrameErrorKind::TooShort { len: body.len() });
    }
    let seq = u32::from_le_bytes([body[2], body[3], body[4], body[5]]);
    let payload = &body[HEADER_LEN..body.len() - CRC_LEN];
    let mut at = 0;
    let parsed = match body[1] {
        KIND_HELLO => {
            let ticks = varint_at(payload, &mut at, "ticks_per_second")?;
            let capacity = varint_at(payload, &mut at, "ring_capacity")?;
            let agent = text_at(payload, &mut at, MAX_AGENT_LEN, "agent")?;
            let version = text_at(payload, &mut at, MAX_VERSION_LEN, "firmware_version")?;
            let ticks_per_second = u32::try_from(ticks)
                .ok()
                .filter(|&t| t > 0)
                .ok_or(malformed("ticks_per_second"))?;
            let ring_capacity = u32::try_from(capacity).map_err(|_| malformed("ring_capacity"))?;
            Body::Hello {
                seq,
                hello: Hello {
                    agent,
                    firmware_version: version,
                    ticks_per_second,
                    ring_capacity,
                },
            }
        }
        KIND_NAMES => {
            at = payload.len();
            Body::Names {
                seq,
                entries: payload,
            }
        }
        KIND_EVENTS => {
            let first_event = varint_at(payload, &mut at, "first_event")?;
            let base_ticks = varint_at(payload, &mut at, "base_ticks")?;
            let events = &payload[at..];
            at = payload.len();
            Body::Events {
                seq,
                first_event,
                base_ticks,
                events,
            }
        }
        KIND_CLOCK => {
            let ticks = varint_at(payload, &mut at, "ticks")?;
            Body::Clock { seq, ticks }
        }
        kind => return Err(FrameErrorKind::UnknownKind { kind }),
    };
    if at != payload.len() {
        return Err(malformed("trailing bytes"));
    }
    Ok(parsed)
}

/// One name-table entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct NameEntry<'a> {
    pub id: u64,
    pub category: Category,
    pub name: &'a str,
}

/// Reads a category byte and a length-prefixed name.
fn category_and_name<'a>(
    input: &'a [u8],
    at: &mut usize,
) -> Result<(Category, &'a str), FrameErrorKind> {
    let raw = *input.get(*at).ok_or(malformed("category"))?;
    let category = Category::try_from(i32::from(raw)).map_err(|_| malformed("category"))?;
    *at += 1;
    let name = text_at(input, at, NAME_MAX_LEN, "name")?;
    Ok((category, name))
}

/// The next entry of a name-table payload, advancing `at`.
pub(crate) fn next_name<'a>(
    entries: &'a [u8],
    at: &mut usize,
) -> Result<NameEntry<'a>, FrameErrorKind> {
    let id = varint_at(entries, at, "id")?;
    if id == TAG_INLINE {
        return Err(malformed("id"));
    }
    let (category, name) = category_and_name(entries, at)?;
    Ok(NameEntry { id, category, name })
}

/// One compact event of a batch, before its name is looked up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CompactEvent<'a> {
    /// Name-table id, or the inline category and name.
    pub name: Result<u64, (Category, &'a str)>,
    pub delta_ticks: i64,
    pub value: u64,
}

/// The next event of a batch payload, advancing `at`.
pub(crate) fn next_event<'a>(
    events: &'a [u8],
    at: &mut usize,
) -> Result<CompactEvent<'a>, FrameErrorKind> {
    let tag = varint_at(events, at, "tag")?;
    let name = if tag == TAG_INLINE {
        Err(category_and_name(events, at)?)
    } else {
        Ok(tag)
    };
    let delta_ticks = varint::unzigzag(varint_at(events, at, "delta_ticks")?);
    let value = varint_at(events, at, "value")?;
    Ok(CompactEvent {
        name,
        delta_ticks,
        value,
    })
}
