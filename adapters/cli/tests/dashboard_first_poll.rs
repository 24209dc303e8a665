//! The dashboard's page in Debian's `chromium` (headless): a one-shot load shows
//! figures, not dashes (the totals and percentiles since the agent started, until a
//! second answer gives rates), the latency charts have a key, the page asks for no
//! favicon (`/favicon.ico` would answer 404), and once rates come, every y-axis label
//! fits the axis.
//!
//! Ignored in a plain `cargo test`; `.ci/run` installs `chromium` and runs it with
//! `--ignored`.

mod common;

use common::*;
use std::io::BufReader;
use std::process::{Command, Stdio};
use std::time::Duration;

/// The DOM once chromium's virtual time reached `budget_ms` (500: before the second
/// poll), with every frame drawn (uPlot draws its axes in a frame).
fn dom_after(url: &str, budget_ms: u32) -> String {
    let output = Command::new("chromium")
        .args(["--headless", "--no-sandbox", "--disable-gpu"])
        .arg("--run-all-compositor-stages-before-draw")
        .arg(format!("--virtual-time-budget={budget_ms}"))
        .arg("--dump-dom")
        .arg(url)
        .stdin(Stdio::null())
        .output()
        .expect("chromium is installed (Debian package `chromium`)");
    assert!(output.status.success(), "{output:?}");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The opening tag of the tile `key` and the text up to the next tile.
fn tile<'a>(dom: &'a str, key: &str) -> &'a str {
    let at = dom
        .find(&format!("data-tile=\"{key}\""))
        .unwrap_or_else(|| panic!("no tile {key} in {dom}"));
    let start = dom[..at].rfind('<').unwrap();
    let end = dom[at + 1..]
        .find("data-tile=")
        .map_or(dom.len(), |next| at + 1 + next);
    &dom[start..end]
}

/// Every chart's y-axis labels (`data-axis-labels`), each checked to fit the axis.
fn axis_labels(dom: &str) -> Vec<String> {
    let mut all = Vec::new();
    let mut at = 0;
    while let Some(i) = dom[at..].find("data-axis-labels=\"") {
        let start = at + i + "data-axis-labels=\"".len();
        let labels = &dom[start..start + dom[start..].find('"').unwrap()];
        for label in labels.split(' ') {
            // uPlot's own labels ("2,000,000") were cut by the 44-pixel axis.
            let fits = label.chars().count() <= 6 && !label.contains(',');
            assert!(fits, "{label:?} in {labels:?}");
            all.push(label.to_owned());
        }
        at = start;
    }
    all
}

/// `telering demo` writing a ring and `telering serve` of it: the page's URL.
fn node() -> (String, Vec<Running>, tempfile::TempDir) {
    let dir = scratch();
    let rings = dir.path().join("rings");
    let demo = Running::spawn(
        telering()
            .args(["demo", "--no-serve", "--duration", "120s", "--agent", "a1"])
            .arg("--dir")
            .arg(&rings)
            .stdout(Stdio::null()),
    );
    eventually(Duration::from_secs(30), || {
        rings.join("a1").exists().then_some(())
    })
    .expect("the demo creates its ring");
    let mut serve = Running::spawn(
        telering()
            .args(["serve", "--port", "0", "--local", "--dir"])
            .arg(&rings)
            .stdout(Stdio::piped()),
    );
    let mut out = BufReader::new(serve.child.stdout.take().unwrap());
    let addr = addr_in(&wait_for_line(&mut out, "serving http://"));
    (format!("http://{addr}/"), vec![demo, serve], dir)
}

#[test]
#[ignore = "needs chromium"]
fn one_answer_shows_totals_and_percentiles_since_start_with_keys_and_no_favicon_request() {
    let (url, _running, _dir) = node();
    let dom = eventually(Duration::from_secs(30), || {
        let dom = dom_after(&url, 500);
        let shown = dom.contains("data-polls=\"1\"") && !tile(&dom, "tx").contains(">0 B since");
        shown.then_some(dom)
    })
    .expect("one poll showing the demo's transfers");
    for key in ["tx", "rx", "req", "xfer", "post", "err", "delivered"] {
        let tile = tile(&dom, key);
        assert!(tile.contains("data-since=\"start\""), "{key}: {tile}");
        assert!(tile.contains(" since start</div>"), "{key}: {tile}");
    }
    for key in ["xfer", "post"] {
        let tile = tile(&dom, key);
        for q in ["p50", "p90", "p99"] {
            let key_shown = tile.contains(&format!("data-series=\"{q}\""));
            assert!(key_shown, "{key} has no key {q}: {tile}");
        }
    }
    // No request for /favicon.ico: the page names an empty icon itself.
    assert!(dom.contains("<link rel=\"icon\" href=\"data:,\">"), "{dom}");
}

#[test]
#[ignore = "needs chromium"]
fn rates_replace_the_totals_and_large_axis_labels_stay_short() {
    let (url, _running, _dir) = node();
    // Virtual time runs the page's polls back to back; the collector's answers change
    // with its own polls, in real time, so a long budget sees several.
    // Every attempt checks that each label fits; it ends when the tx chart has rates
    // (one point draws no scale: the labels are empty until there are two).
    let scaled = |labels: &[String]| labels.iter().any(|l| l.ends_with(['K', 'M', 'G']));
    let dom = eventually(Duration::from_secs(90), || {
        let dom = dom_after(&url, 120_000);
        let rates = tile(&dom, "tx").contains("data-since=\"rate\"");
        (rates && scaled(&axis_labels(&dom))).then_some(dom)
    })
    .expect("the page computes rates and charts them");
    let tx = tile(&dom, "tx");
    assert!(
        tx.contains("B/s</div>") && !tx.contains("since start"),
        "{tx}"
    );
}
