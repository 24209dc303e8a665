//! `telering serve`'s dashboard in a real browser: Debian's `chromium`, headless, loads
//! `/` while `telering demo` writes a ring, and the totals the page shows lie between
//! two scrapes of `/metrics` taken just before and just after (the events delivered
//! among them), a live demo's exporter is not shown failing, an agent whose ring is
//! full is shown dropping with the cause (`ring full`), never ok, a page whose data
//! request fails says so, and an agent whose file name holds control and
//! bidirectional characters and HTML is titled with them escaped, as text; an agent's
//! route table shows a hostile route name as escaped text, ranks routes by bytes/s,
//! and re-sorts on clicks on its headers (made by a test extension's content script).
//! Screenshots go to `target/ci-artefacts/`.
//!
//! Ignored in a plain `cargo test`; `.ci/run` installs `chromium` and runs
//! `cargo test -p telering-cli --test dashboard_browser -- --ignored`.

mod common;

use common::*;
use std::io::BufReader;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// `telering demo` writing a ring, and `telering serve` of its directory.
struct Node {
    _demo: Running,
    _serve: Running,
    addr: SocketAddr,
    _dir: tempfile::TempDir,
}

fn node() -> Node {
    node_with_ring(None)
}

/// As [`node`], the demo's ring holding `slots` slots when given.
fn node_with_ring(slots: Option<u32>) -> Node {
    let dir = scratch();
    let rings = dir.path().join("rings");
    let mut demo = telering();
    if let Some(slots) = slots {
        demo.env("NIXL_TELEMETRY_BUFFER_SIZE", slots.to_string());
    }
    let demo = Running::spawn(
        demo.args([
            "demo",
            "--no-serve",
            "--duration",
            "120s",
            "--agent",
            "browser-agent",
            "--dir",
        ])
        .arg(&rings)
        .stdout(Stdio::null())
        .stderr(Stdio::null()),
    );
    eventually(Duration::from_secs(30), || {
        rings.join("browser-agent").exists().then_some(())
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
    Node {
        _demo: demo,
        _serve: serve,
        addr,
        _dir: dir,
    }
}

/// `target/ci-artefacts/` (under `CARGO_TARGET_DIR` when it is set).
fn artefacts() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let target =
        std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), |t| root.join(t));
    let dir = target.join("ci-artefacts");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Chromium, headless, with the page's timers run in virtual time for `budget_ms`:
/// it returns once the page is idle at the end of the budget, not after a fixed wait.
fn chromium(args: &[&str], url: &str, budget_ms: u32) -> String {
    let output = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
        ])
        .arg(format!("--virtual-time-budget={budget_ms}"))
        .args(args)
        .arg(url)
        .stdin(Stdio::null())
        .output()
        .expect("chromium is installed (Debian package `chromium`)");
    assert!(
        output.status.success(),
        "chromium: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The value of attribute `name` in the first tag of `html` at or after `from`.
fn attribute<'a>(html: &'a str, from: usize, name: &str) -> Option<&'a str> {
    let tag_end = from + html[from..].find('>')?;
    let tag = &html[from..tag_end];
    let start = tag.find(&format!("{name}=\""))? + name.len() + 2;
    Some(&tag[start..start + tag[start..].find('"')?])
}

/// `(family, value)` of every total the page shows for `agent`.
fn shown_totals(dom: &str, agent: &str) -> Vec<(String, u64)> {
    let card = dom
        .find(&format!("<section class=\"agent\" data-agent=\"{agent}\""))
        .unwrap_or_else(|| panic!("no card for {agent} in {dom}"));
    let end = card + dom[card..].find("</section>").unwrap();
    let mut totals = Vec::new();
    let mut at = card;
    while let Some(i) = dom[at..end].find("<span data-family=") {
        let tag = at + i;
        let family = attribute(dom, tag, "data-family").unwrap().to_owned();
        let value = attribute(dom, tag, "data-value").unwrap().parse().unwrap();
        totals.push((family, value));
        at = tag + 1;
    }
    totals
}

fn body_attribute<'a>(dom: &'a str, name: &str) -> Option<&'a str> {
    attribute(dom, dom.find("<body")?, name)
}

#[test]
#[ignore = "needs chromium"]
fn the_dashboard_shows_what_metrics_shows_at_the_same_moment() {
    let node = node();
    let url = format!("http://{}/", node.addr);
    let agent = "browser-agent";
    let series = |family: &str| format!("{family}{{agent_name=\"{agent}\",hostname=");
    // The page says when its figures were taken (`data-time-ms`); when that moment
    // lies between a scrape of /metrics before the page loaded and one after, its
    // totals must lie between theirs.
    let now_ms = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis()
    };
    let checked = eventually(Duration::from_secs(60), || {
        // The clock is read after the first scrape's answer and before the second's
        // request, so both scrapes' moments bracket [before_ms, after_ms].
        let before = http_get(node.addr, "/metrics");
        let before_ms = now_ms();
        let dom = chromium(&["--dump-dom"], &url, 3000);
        let after_ms = now_ms();
        let after = http_get(node.addr, "/metrics");
        if body_attribute(&dom, "data-polls")?.parse::<u32>().ok()? < 2 {
            return None;
        }
        let shown_ms: u128 = body_attribute(&dom, "data-time-ms")?.parse().ok()?;
        if !(before_ms..=after_ms).contains(&shown_ms) {
            return None; // figures from before this load (the first after a quiet spell)
        }
        let totals = shown_totals(&dom, agent);
        assert_eq!(totals.len(), 10, "{totals:?}");
        for (family, value) in &totals {
            let low =
                sample(&before, &series(family)).unwrap_or_else(|| panic!("{family} in {before}"));
            let high = sample(&after, &series(family)).unwrap();
            assert!(
                low <= *value as f64 && *value as f64 <= high,
                "{family}: the page shows {value}, /metrics {low} before and {high} after"
            );
        }
        let total = |family: &str| totals.iter().find(|(f, _)| f == family).unwrap().1;
        // The exporter-health part agrees with the totals it is made of.
        let undelivered = total("agent_telemetry_events_dropped_total")
            + total("agent_telemetry_events_missed_total")
            + total("agent_telemetry_events_unexported_total");
        let tile = dom
            .find("data-tile=\"undelivered\"")
            .expect("an undelivered tile");
        let tile = dom[..tile].rfind('<').unwrap();
        assert_eq!(
            attribute(&dom, tile, "data-total"),
            Some(undelivered.to_string().as_str()),
            "{dom}"
        );
        let delivered = total("agent_telemetry_events_delivered_total");
        (total("agent_tx_bytes_total") > 0 && delivered > 0).then_some(dom)
    })
    .expect("the page shows the demo's transfers");
    assert!(checked.contains("data-state=\"ok\""), "{checked}");
    assert_eq!(body_attribute(&checked, "data-agents-total"), Some("1"));
    assert!(checked.contains("errors by status:"), "{checked}");
    // A live demo's export is healthy: /metrics says 0, and the page does not say failing.
    let scrape = http_get(node.addr, "/metrics");
    assert_eq!(
        sample(&scrape, &series("agent_telemetry_exporter_failing")),
        Some(0.0),
        "{scrape}"
    );
    assert!(
        checked.contains(&format!(
            "<section class=\"agent\" data-agent=\"{agent}\" data-exporter=\"ok\""
        )),
        "{checked}"
    );
    assert!(checked.contains("exporter health"), "{checked}");
    assert!(!checked.contains("FAILING"), "{checked}");
    let shot = artefacts().join("dashboard.png");
    chromium(
        &[
            "--window-size=1400,900",
            &format!("--screenshot={}", shot.display()),
        ],
        &url,
        5000,
    );
    assert!(
        std::fs::metadata(&shot).unwrap().len() > 10_000,
        "{}",
        shot.display()
    );
}

#[test]
#[ignore = "needs chromium"]
fn an_agent_whose_ring_is_full_is_shown_dropping_with_its_cause_never_ok() {
    // 64 slots that nothing drains (serve only observes): full within a second, then
    // the writer refuses every event.
    let node = node_with_ring(Some(64));
    let agent = "browser-agent";
    let url = format!("http://{}/", node.addr);
    let card = format!("<section class=\"agent\" data-agent=\"{agent}\"");
    let dom = eventually(Duration::from_secs(60), || {
        let dom = chromium(&["--dump-dom"], &url, 3000);
        if body_attribute(&dom, "data-polls")?.parse::<u32>().ok()? < 2 {
            return None;
        }
        dom.contains(&format!("{card} data-exporter=\"dropping\""))
            .then_some(dom)
    })
    .expect("the card says dropping");
    let start = dom.find(&card).unwrap();
    let end = start + dom[start..].find("</section>").unwrap();
    let card = &dom[start..end];
    let tile = card
        .find("data-tile=\"exporter\"")
        .expect("the exporter tile");
    let tile = &card[tile..];
    assert!(tile.contains("data-state=\"dropping\""), "{card}");
    // Under load the agent's own buffers may overflow too (`staging`): every cause is
    // named, the full ring among them.
    let causes = attribute(tile, 0, "data-causes").expect("data-causes");
    assert!(causes.split(',').any(|c| c == "ring_full"), "{causes}");
    assert!(tile.contains("DROPPING: ring full "), "{card}");
    assert!(!card.contains("data-state=\"ok\""), "{card}");
    // The undelivered tile counts the same losses as /metrics.
    let dropped = shown_totals(&dom, agent)
        .into_iter()
        .find(|(f, _)| f == "agent_telemetry_events_dropped_total")
        .unwrap()
        .1;
    assert!(dropped > 0, "{card}");
    let shot = artefacts().join("dashboard-dropping.png");
    chromium(
        &[
            "--window-size=1400,900",
            &format!("--screenshot={}", shot.display()),
        ],
        &url,
        3000,
    );
    assert!(shot.exists());
}

#[test]
#[ignore = "needs chromium"]
fn a_page_whose_data_request_fails_says_so() {
    let node = node();
    // limit=0 is refused by /api/agents with 400 and a reason.
    let url = format!("http://{}/?limit=0", node.addr);
    let dom = chromium(&["--dump-dom"], &url, 2000);
    let status = dom.find("<div id=\"status\"").expect("status line");
    assert_eq!(
        attribute(&dom, status, "data-state"),
        Some("error"),
        "{dom}"
    );
    let text = &dom[status..status + dom[status..].find("</div>").unwrap()];
    assert!(
        text.contains("Cannot load /api/agents?offset=0&amp;limit=0"),
        "{text}"
    );
    assert!(text.contains("400 Bad Request"), "{text}");
    assert!(text.contains("limit=0 is out of range"), "{text}");
    let shot = artefacts().join("dashboard-error.png");
    chromium(
        &[
            "--window-size=1000,400",
            &format!("--screenshot={}", shot.display()),
        ],
        &url,
        2000,
    );
    assert!(shot.exists());
}

#[test]
#[ignore = "needs chromium"]
fn a_refresh_link_out_of_range_or_not_a_number_cannot_make_the_page_poll_in_a_loop() {
    let node = node();
    // (the link's value, the refresh the page shows, most polls in 3 s of page time)
    let cases = [
        ("abc", "1", 5),
        ("Infinity", "1", 5),
        ("NaN", "1", 5),
        ("", "1", 5),
        ("3000000", "3600", 1),
        ("-5", "0.2", 17),
        ("0.001", "0.2", 17),
        ("2", "2", 3),
    ];
    for (value, shown, most_polls) in cases {
        let url = format!("http://{}/?refresh={value}", node.addr);
        let dom = chromium(&["--dump-dom"], &url, 3000);
        let refresh = dom.find("<span id=\"refresh\">").expect("refresh") + 19;
        let text = &dom[refresh..refresh + dom[refresh..].find('<').unwrap()];
        assert_eq!(text, shown, "refresh={value}");
        let polls: u32 = body_attribute(&dom, "data-polls").unwrap().parse().unwrap();
        assert!(
            (1..=most_polls).contains(&polls),
            "refresh={value}: {polls} polls"
        );
    }
}

#[test]
#[ignore = "needs chromium"]
fn a_hostile_agent_name_is_shown_escaped_as_text() {
    let dir = scratch();
    let rings = dir.path().join("rings");
    std::fs::create_dir(&rings).unwrap();
    let hostile = "evil\u{202e}<img src=x onerror=alert(1)>\u{1b}[2J";
    let mut w =
        telering_shm::ShmWriter::create(telering_shm::WriterOptions::new(&rings, "plain")).unwrap();
    w.write_batch(&[telering_core::Event::new(
        1,
        telering_core::Category::Transfer,
        telering_core::builtin::AGENT_TX_BYTES.name,
        64,
    )]);
    std::fs::rename(w.path(), rings.join(hostile)).unwrap();
    let mut serve = Running::spawn(
        telering()
            .args(["serve", "--port", "0", "--local", "--dir"])
            .arg(&rings)
            .stdout(Stdio::piped()),
    );
    let mut out = BufReader::new(serve.child.stdout.take().unwrap());
    let addr = addr_in(&wait_for_line(&mut out, "serving http://"));
    let url = format!("http://{addr}/");
    let dom = eventually(Duration::from_secs(60), || {
        let dom = chromium(&["--dump-dom"], &url, 3000);
        dom.contains("<section class=\"agent\"").then_some(dom)
    })
    .expect("the agent's card");
    let title = "<h2>evil\\u{202e}&lt;img src=x onerror=alert(1)&gt;\\u{1b}[2J</h2>";
    assert!(dom.contains(title), "{dom}");
    assert!(!dom.contains("<img"), "markup from a file name: {dom}");
    w.close().unwrap();
}

/// The conservation matrix's dashboard cell: an agent records a known number of events
/// into a ring of 64 slots that nothing drains, and the dashboard's card shows the
/// events the ring delivered and the ones it dropped, which add up to every event the
/// agent recorded; the card never says ok.
#[test]
#[ignore = "needs chromium"]
fn the_dashboard_shows_every_event_recorded_delivered_or_dropped() {
    const RECORDED: u64 = 500;
    let dir = scratch();
    let rings = dir.path().join("rings");
    let agent = "ledger-agent";
    let telemetry = telering_std::Telemetry::builder(agent)
        .enabled(true)
        .dir(&rings)
        .buffer_size(64)
        .lane_capacity(1024)
        .early_flush(false)
        .run_interval(Duration::from_secs(3600))
        .build()
        .unwrap();
    for _ in 0..RECORDED {
        telemetry.update_tx_requests_num(1);
    }
    telemetry.flush().unwrap();
    let stats = telemetry.stats();
    assert_eq!(stats.events_recorded, RECORDED, "{stats:?}");
    let mut serve = Running::spawn(
        telering()
            .args(["serve", "--port", "0", "--local", "--dir"])
            .arg(&rings)
            .stdout(Stdio::piped()),
    );
    let mut out = BufReader::new(serve.child.stdout.take().unwrap());
    let addr = addr_in(&wait_for_line(&mut out, "serving http://"));
    let url = format!("http://{addr}/");
    let card = format!("<section class=\"agent\" data-agent=\"{agent}\"");
    let total = |totals: &[(String, u64)], family: &str| {
        totals
            .iter()
            .find(|(f, _)| f == family)
            .map_or(0, |(_, v)| *v)
    };
    let (dom, delivered, dropped) = eventually(Duration::from_secs(60), || {
        let dom = chromium(&["--dump-dom"], &url, 3000);
        if !dom.contains(&card) {
            return None;
        }
        let totals = shown_totals(&dom, agent);
        let delivered = total(&totals, "agent_tx_requests_num_total");
        let dropped = total(&totals, "agent_telemetry_events_dropped_total");
        (delivered + dropped == RECORDED).then_some((dom, delivered, dropped))
    })
    .expect("the card adds up to every event recorded");
    // A 64-slot ring holds 62 events and the report of the drops in its last slot.
    assert_eq!((delivered, dropped), (62, RECORDED - 62));
    let start = dom.find(&card).unwrap();
    let end = start + dom[start..].find("</section>").unwrap();
    assert!(
        !dom[start..end].contains("data-state=\"ok\""),
        "{}",
        &dom[start..end]
    );
    drop(telemetry);
}

/// A browser extension whose content script clicks the dashboard's route-table
/// headers once the table has three rows, and writes the order after each click
/// (rows' `data-route`, the column's `data-sorted`) into a `<pre id="clicks">`.
const CLICKS_MANIFEST: &str = r#"{"manifest_version": 3, "name": "telering test clicks", "version": "1",
 "content_scripts": [{"matches": ["http://127.0.0.1/*"], "js": ["clicks.js"], "run_at": "document_idle"}]}"#;
const CLICKS_SCRIPT: &str = r#"
function run() {
  if (document.querySelectorAll(".routes tbody tr").length < 3) { setTimeout(run, 100); return; }
  const order = () => [...document.querySelectorAll(".routes tbody tr")].map((tr) => tr.dataset.route).join(",");
  const out = [];
  for (const col of ["route", "route", "bytes", "bytes"]) {
    const th = document.querySelector(`.routes th[data-col="${col}"]`);
    th.click();
    out.push(`${col}: ${order()} ${th.dataset.sorted}`);
  }
  out.push("search=" + location.search);
  const pre = document.createElement("pre");
  pre.id = "clicks";
  pre.textContent = out.join("\n");
  document.body.appendChild(pre);
}
run();
"#;

/// The rows of the first route table in `dom`, in the order shown: each row's
/// `data-route` (the route's index on the server) and its cells' text.
fn route_rows(dom: &str) -> Vec<(usize, Vec<String>)> {
    let Some(start) = dom.find("<div class=\"routes\"") else {
        return Vec::new();
    };
    let end = start + dom[start..].find("</table>").unwrap();
    let table = &dom[start..end];
    let mut rows = Vec::new();
    let mut at = 0;
    while let Some(i) = table[at..].find("<tr data-route=\"") {
        let tr = at + i;
        let index = attribute(table, tr, "data-route").unwrap().parse().unwrap();
        let row_end = tr + table[tr..].find("</tr>").unwrap();
        let cells = table[tr..row_end]
            .split("<td data-col=\"")
            .skip(1)
            .map(|c| {
                let text = &c[c.find('>').unwrap() + 1..];
                text[..text.find("</td>").unwrap()].to_owned()
            })
            .collect();
        rows.push((index, cells));
        at = row_end;
    }
    rows
}

#[test]
#[ignore = "needs chromium"]
fn the_route_table_shows_hostile_route_names_as_text_and_sorts_by_a_column() {
    use telering_std::route::{MemoryType, Operation, Route};
    let dir = scratch();
    let rings = dir.path().join("rings");
    std::fs::create_dir(&rings).unwrap();
    let t = std::sync::Arc::new(
        telering_std::TelemetryBuilder::new("routed")
            .enabled(true)
            .exporter("buffer")
            .dir(&rings)
            .run_interval(Duration::from_millis(100))
            .build()
            .unwrap(),
    );
    let hostile = "z<script>alert(1)</script>\u{1b}[2J\u{202e}\n";
    let route = |peer: &str| {
        let r = Route::new(
            Operation::Write,
            "UCX",
            MemoryType::Vram,
            MemoryType::Dram,
            peer,
        );
        t.route(&r).unwrap()
    };
    // Index 0, 1, 2 on the server; bytes per tick 1000, 3000, 2000.
    let routes = [
        (route("a-peer"), 1000),
        (route("b-peer"), 3000),
        (route(hostile), 2000),
    ];
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let recorder = {
        let t = t.clone();
        let stop = stop.clone();
        std::thread::spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                for (id, bytes) in routes {
                    t.add_route_xfer_stats_us(id, 40, bytes, 2, 1);
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        })
    };
    let mut serve = Running::spawn(
        telering()
            .args(["serve", "--port", "0", "--local", "--dir"])
            .arg(&rings)
            .stdout(Stdio::piped()),
    );
    let mut out = BufReader::new(serve.child.stdout.take().unwrap());
    let addr = addr_in(&wait_for_line(&mut out, "serving http://"));
    // Rows once the page shows three routes (`rated`: with rates, which need two
    // answers half a refresh apart on the server's clock).
    let table = |query: &str, rated: bool| {
        let url = format!("http://{addr}/{query}");
        let mut last = String::new();
        eventually(Duration::from_secs(60), || {
            let dom = chromium(&["--dump-dom"], &url, 6000);
            let rows = route_rows(&dom);
            last.clone_from(&dom);
            let ready = rows.len() == 3 && (!rated || dom.contains("data-rated=\"true\""));
            ready.then_some((dom, rows))
        })
        .unwrap_or_else(|| panic!("a route table in {last}"))
    };
    let order = |rows: &[(usize, Vec<String>)]| rows.iter().map(|r| r.0).collect::<Vec<_>>();
    // Default: bytes/s, highest first; the routes' rates are 1000 : 3000 : 2000.
    let (dom, rows) = table("?refresh=0.2", true);
    assert_eq!(order(&rows), [1, 2, 0], "{dom}");
    assert!(dom.contains("data-sorted=\"desc\""), "{dom}");
    for (_, cells) in &rows {
        assert_eq!(cells.len(), 8);
        assert!(cells[1].ends_with("B/s"), "{cells:?}");
    }
    // The hostile name is text, escaped by the server, never markup.
    let shown =
        "WRITE UCX VRAM-&gt;DRAM z&lt;script&gt;alert(1)&lt;/script&gt;\\u{1b}[2J\\u{202e}\\n";
    assert_eq!(rows[1].1[0], shown, "{dom}");
    assert!(!dom.contains("<script>alert"), "{dom}");
    // Sorted by another column (as a click on its header does, which keeps the order
    // in the address): the route, ascending; the total bytes, ascending.
    let (_, rows) = table("?routes=route", false);
    assert_eq!(order(&rows), [0, 1, 2]);
    let (dom, rows) = table("?routes=bytes", false);
    assert_eq!(order(&rows), [0, 2, 1]);
    assert!(dom.contains("data-sorted=\"asc\""), "{dom}");
    // Clicks on the headers, by a content script of a browser extension loaded for
    // this run only, which writes the order after each click into the page.
    let extension = dir.path().join("clicks-extension");
    std::fs::create_dir(&extension).unwrap();
    std::fs::write(extension.join("manifest.json"), CLICKS_MANIFEST).unwrap();
    std::fs::write(extension.join("clicks.js"), CLICKS_SCRIPT).unwrap();
    let profile = dir.path().join("chromium-profile");
    let clicked = eventually(Duration::from_secs(60), || {
        let dom = chromium(
            &[
                "--dump-dom",
                &format!("--user-data-dir={}", profile.display()),
                &format!("--load-extension={}", extension.display()),
                &format!("--disable-extensions-except={}", extension.display()),
            ],
            &format!("http://{addr}/"),
            6000,
        );
        let start = dom.find("<pre id=\"clicks\">")? + "<pre id=\"clicks\">".len();
        let text = dom[start..start + dom[start..].find("</pre>")?].to_owned();
        text.contains("search=").then_some(text)
    })
    .expect("the click script reports");
    assert_eq!(
        clicked.lines().collect::<Vec<_>>(),
        [
            "route: 0,1,2 asc",
            "route: 2,1,0 desc",
            "bytes: 1,2,0 desc",
            "bytes: 0,2,1 asc",
            "search=?routes=bytes",
        ],
        "{clicked}"
    );
    let shot = artefacts().join("dashboard-routes.png");
    chromium(
        &[
            "--window-size=1400,900",
            &format!("--screenshot={}", shot.display()),
        ],
        &format!("http://{addr}/"),
        3000,
    );
    assert!(shot.exists());
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    recorder.join().unwrap();
}

/// `serve` under an open-file limit it cannot raise, on more rings than the limit
/// leaves room for: the page's status line says how many rings it cannot show, never
/// a plain "ok".
#[test]
#[ignore = "needs chromium"]
fn a_node_that_cannot_follow_every_ring_says_so_on_the_page() {
    const RINGS: usize = 40;
    let dir = scratch();
    let rings = dir.path().join("rings");
    let agents = live_rings(&rings, RINGS, 1);
    let (_serve, addr) = serve_under_fd_limit(&rings, 80);
    let url = format!("http://{addr}/");
    let dom = eventually(Duration::from_secs(60), || {
        let dom = chromium(&["--dump-dom"], &url, 3000);
        let unread: usize = body_attribute(&dom, "data-rings-not-followed")?
            .parse()
            .ok()?;
        (unread > 0).then_some(dom)
    })
    .expect("the page counts the rings it cannot show");
    let status = dom.find("<div id=\"status\"").expect("the status line");
    assert_eq!(
        attribute(&dom, status, "data-state"),
        Some("incomplete"),
        "{}",
        &dom[status..]
    );
    assert!(dom[status..].contains("NOT SHOWN: "), "{}", &dom[status..]);
    drop(agents);
}

/// The demo's slow peer at a glance: with `telering demo` writing its ring (and its
/// route file), the dashboard's route table marks `decode-1`'s route as the slowest,
/// whatever the table is sorted by.
#[test]
#[ignore = "needs chromium"]
fn the_demo_dashboard_marks_the_slow_peers_route_slowest() {
    let node = node();
    let url = format!("http://{}/?refresh=0.5", node.addr);
    let mut last = String::new();
    let row = eventually(Duration::from_secs(60), || {
        let dom = chromium(&["--dump-dom"], &url, 6000);
        last.clone_from(&dom);
        if !dom.contains("data-rated=\"true\"") {
            return None;
        }
        let body = &dom[dom.find("<body")?..];
        let tr = body.find("data-slowest=\"true\"")?;
        let end = tr + body[tr..].find("</tr>")?;
        Some((
            body[tr..end].to_owned(),
            body.matches("data-slowest=\"true\"").count(),
        ))
    })
    .unwrap_or_else(|| panic!("a route marked slowest in {last}"));
    assert!(
        row.0.contains("WRITE UCX VRAM-&gt;VRAM decode-1"),
        "{row:?}"
    );
    assert_eq!(row.1, 1, "one route marked: {last}");
}
