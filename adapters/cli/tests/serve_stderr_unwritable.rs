//! `telering serve` whose stderr cannot be written (a full disk: `/dev/full`) goes on
//! serving: a log line that cannot be printed is lost, never a reason to stop.

mod common;
use common::*;
use std::io::BufReader;
use std::process::Stdio;
use std::time::Duration;

#[test]
fn serve_with_an_unwritable_stderr_keeps_serving_through_its_warnings() {
    let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
        eprintln!("no /dev/full on this system; nothing to check");
        return;
    };
    let dir = scratch();
    let rings = dir.path().join("rings");
    std::fs::create_dir(&rings).unwrap();
    // Not a ring: the first scan warns about it.
    std::fs::write(rings.join("not-a-ring"), b"junk").unwrap();
    let mut serve = Running::spawn(
        telering()
            .args(["serve", "--port", "0", "--local", "--dir"])
            .arg(&rings)
            .env("TELERING_LOG", "debug")
            .stdout(Stdio::piped())
            .stderr(full),
    );
    let mut out = BufReader::new(serve.child.stdout.take().unwrap());
    let addr = addr_in(&wait_for_line(&mut out, "serving"));
    // More to warn about while it serves.
    std::fs::write(rings.join("another-non-ring"), b"junk").unwrap();
    let served = eventually(Duration::from_secs(30), || {
        let page = try_http_get(addr, "/api/agents").ok()?;
        page.contains("\"agents_total\":0").then_some(())
    });
    assert!(served.is_some(), "/api/agents answers");
    for _ in 0..3 {
        assert!(http_get(addr, "/metrics").starts_with("HTTP/1.1 200"));
    }
    assert!(
        serve.child.try_wait().unwrap().is_none(),
        "serve is still running"
    );
}
