//! The C API's details, from C (`details.c`): a backend handle whose telemetry was
//! destroyed is refused, a file that is not a ring is a corrupt file, a batch of
//! capacity 0 is an invalid argument, errors name the function called, an empty `dir`
//! option is unset, and name errors give C advice. The valgrind run is in
//! `tooling.rs`.

mod common;

use common::{compile, program, run_ok};
use std::collections::BTreeMap;

/// `details.c`'s lines: name → (status, last error).
pub fn details(stdout: &str) -> BTreeMap<String, (String, String)> {
    stdout
        .lines()
        .filter_map(|l| {
            let mut parts = l.splitn(3, ' ');
            Some((
                parts.next()?.to_string(),
                (
                    parts.next()?.to_string(),
                    parts.next().unwrap_or("").to_string(),
                ),
            ))
        })
        .collect()
}

#[test]
fn c_details_return_the_statuses_the_header_promises_and_name_the_function() {
    let scratch = tempfile::tempdir().unwrap();
    let exe = compile("details.c", scratch.path());
    let dir = scratch.path().join("rings");
    std::fs::create_dir(&dir).unwrap();
    let out = run_ok(program(&exe).arg(&dir));
    let stdout = String::from_utf8(out.stdout).unwrap();
    let d = details(&stdout);
    let status = |name: &str| d[name].0.as_str();
    let error = |name: &str| d[name].1.as_str();

    for ok in [
        "create",
        "backend_create",
        "backend_add_live",
        "update",
        "flush",
    ] {
        assert_eq!(status(ok), "TELERING_OK", "{ok}: {stdout}");
    }
    assert_eq!(
        status("backend_add_after_destroy"),
        "TELERING_ERR_INVALID_HANDLE"
    );
    assert!(
        error("backend_add_after_destroy")
            .starts_with("telering_backend_add_event: argument `backend` belongs to a telering_t that was destroyed"),
        "{stdout}"
    );
    assert_eq!(
        status("backend_get_after_destroy"),
        "TELERING_ERR_INVALID_HANDLE"
    );
    assert_eq!(status("backend_destroy"), "TELERING_OK");

    for file in ["reader_open_passwd", "reader_open_maps"] {
        assert_eq!(status(file), "TELERING_ERR_CORRUPT_FILE", "{stdout}");
        assert!(
            error(file).starts_with("telering_reader_open: "),
            "{stdout}"
        );
    }

    assert_eq!(status("reader_open_ring"), "TELERING_OK", "{stdout}");
    assert_eq!(
        status("read_batch_capacity_0"),
        "TELERING_ERR_INVALID_ARGUMENT"
    );
    assert!(
        error("read_batch_capacity_0")
            .starts_with("telering_reader_read_batch: argument `capacity` is 0"),
        "{stdout}"
    );
    assert!(stdout.contains("count_after_capacity_0 0"), "{stdout}");
    assert_eq!(
        status("reader_next_null_reader"),
        "TELERING_ERR_NULL_POINTER"
    );
    assert!(
        error("reader_next_null_reader").starts_with("telering_reader_next: "),
        "{stdout}"
    );

    assert_eq!(status("record_long_name"), "TELERING_ERR_INVALID_NAME");
    assert!(
        !error("record_long_name").contains("new_truncated"),
        "{stdout}"
    );
    assert!(
        error("record_long_name").contains("at most 31 bytes fit (shorten it"),
        "{stdout}"
    );

    assert_eq!(status("create_empty_dir"), "TELERING_OK", "{stdout}");
    assert_eq!(status("destroy_2"), "TELERING_OK", "{stdout}");
    // A lane of 4 holds 3; on schedule only, nothing drains it while the loop runs.
    assert_eq!(status("create_on_schedule"), "TELERING_OK", "{stdout}");
    assert_eq!(
        d["on_schedule_written"],
        ("3".into(), "7".into()),
        "{stdout}"
    );
    assert_eq!(status("destroy_3"), "TELERING_OK", "{stdout}");
}
