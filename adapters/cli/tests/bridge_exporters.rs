//! `telering bridge --exporter LIST` (or `TELERING_EXPORTERS`): each link's agent goes
//! through an exporter list beside its ring, with the same sums and the same losses;
//! a bad setting anywhere in the list exits 2 before any file is made or replaced.

mod bridge_support;
mod common;

use bridge_support::*;
use common::{assert_fails, parse_json_lines, scratch, telering};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;
use telering_core::Event;

/// Per-name (rows, sum of values) of a CSV file the `csv` exporter wrote.
fn csv_sums(path: &Path) -> BTreeMap<String, (u64, u64)> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("timestamp_us,category,event,value"));
    let mut out = BTreeMap::new();
    for line in lines {
        let fields: Vec<&str> = line.split(',').collect();
        assert_eq!(fields.len(), 4, "{line}");
        let entry = out.entry(fields[2].to_owned()).or_insert((0, 0));
        entry.0 += 1;
        entry.1 += fields[3].parse::<u64>().unwrap();
    }
    out
}

fn device_sums(all: &BTreeMap<String, (u64, u64)>) -> BTreeMap<String, (u64, u64)> {
    all.iter()
        .filter(|(name, _)| {
            !name.starts_with("telering_link_") && *name != "agent_telemetry_events_dropped"
        })
        .map(|(n, v)| (n.clone(), *v))
        .collect()
}

fn run_file_link(dir: &Path, exporters: &str, stream: &[u8]) -> serde_json::Value {
    let capture = dir.join("uart.bin");
    std::fs::write(&capture, stream).unwrap();
    let out = telering()
        .args(["bridge", "--json", "--dir"])
        .arg(dir.join("rings"))
        .args(["--exporter", exporters])
        .arg(format!("file:{}", capture.display()))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    parse_json_lines(&String::from_utf8_lossy(&out.stdout)).remove(0)
}

#[test]
fn a_clean_link_exported_as_csv_has_exactly_the_sums_the_device_sent() {
    let dir = scratch();
    let events = mix(3000, 21);
    let s = run_file_link(dir.path(), "nop,csv", &v2_stream("csv-fw", &events));
    let csv = csv_sums(&dir.path().join("rings").join("csv-fw.csv"));
    assert_eq!(device_sums(&csv), sums(&events), "{s}");
    assert_eq!(csv.get("agent_telemetry_events_dropped"), None);
    // The ring has the same events; each exporter says it delivered all of them.
    let ring = ring_events(&dir.path().join("rings").join("csv-fw"));
    assert_eq!(sums(&device_events(&ring)), sums(&events));
    let exporters = s["exporters"].as_array().unwrap();
    assert_eq!(exporters.len(), 2, "{s}");
    for x in exporters {
        assert_eq!(x["lost"].as_u64(), Some(0), "{s}");
    }
    // Delivered: the device's events and the link's own (none lost here).
    let csv_rows: u64 = csv.values().map(|v| v.0).sum();
    assert_eq!(exporters[1]["delivered"].as_u64(), Some(csv_rows), "{s}");
}

#[test]
fn a_noisy_link_exported_as_csv_delivers_or_counts_every_event_with_its_cause() {
    let dir = scratch();
    let events = mix(6000, 13);
    let damaged = damage(&v2_stream("noisy-fw", &events), 9);
    let s = run_file_link(dir.path(), "csv", &damaged);
    let csv = csv_sums(&dir.path().join("rings").join("noisy-fw.csv"));
    let delivered: u64 = device_sums(&csv).values().map(|v| v.0).sum();
    let lost = lost(&s);
    assert!(lost > 0 && s["lost_damaged"].as_u64().unwrap() > 0, "{s}");
    // Recorded = delivered + counted as lost, at the exporter.
    assert_eq!(delivered + lost, events.len() as u64, "{s}");
    let reported = csv.get("agent_telemetry_events_dropped").map_or(0, |v| v.1);
    assert_eq!(reported, lost, "{s}");
    // Each cause, as the link counted it.
    for (name, key) in [
        ("telering_link_lost_damaged", "lost_damaged"),
        ("telering_link_lost_missing", "lost_missing"),
        ("telering_link_lost_unknown_name", "lost_unknown_name"),
        ("telering_link_noise_bytes", "noise_bytes"),
    ] {
        assert_eq!(
            csv.get(name).map_or(0, |v| v.1),
            s[key].as_u64().unwrap(),
            "{name}: {s}"
        );
    }
    // The exporter has what the ring has.
    let ring: Vec<Event> = device_events(&ring_events(&dir.path().join("rings").join("noisy-fw")));
    assert_eq!(device_sums(&csv), sums(&ring));
}

#[test]
fn the_exporter_list_can_come_from_telering_exporters() {
    let dir = scratch();
    let capture = dir.path().join("uart.bin");
    let events = mix(200, 4);
    std::fs::write(&capture, v2_stream("env-fw", &events)).unwrap();
    let out = telering()
        .env("TELERING_EXPORTERS", "csv")
        .args(["bridge", "--json", "--dir"])
        .arg(dir.path())
        .arg(format!("file:{}", capture.display()))
        .output()
        .unwrap();
    assert!(out.status.success());
    let csv = csv_sums(&dir.path().join("env-fw.csv"));
    assert_eq!(device_sums(&csv), sums(&events));
}

#[test]
fn a_bad_setting_anywhere_in_the_list_exits_2_and_no_ring_is_replaced() {
    let dir = scratch();
    let rings = dir.path().join("rings");
    std::fs::create_dir_all(&rings).unwrap();
    // A ring and a CSV file from an earlier run, which must survive.
    let ring = rings.join("dev");
    std::fs::write(&ring, b"earlier ring").unwrap();
    let capture = dir.path().join("uart.bin");
    std::fs::write(&capture, v2_stream("dev", &mix(10, 1))).unwrap();
    let run = |exporters: &str, env: &[(&str, &str)]| {
        let mut cmd = telering();
        cmd.args(["bridge", "--dir"])
            .arg(&rings)
            .args(["--exporter", exporters])
            .arg(format!("dev=file:{}", capture.display()));
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.output().unwrap()
    };
    for (exporters, env, needles) in [
        ("csv,kafka", vec![], vec!["--exporter", "kafka"]),
        ("csv,,nop", vec![], vec!["--exporter", "empty entry"]),
        ("csv,buffer", vec![], vec!["buffer", "ring file itself"]),
        (
            "csv,otlp",
            vec![("OTEL_EXPORTER_OTLP_ENDPOINT", "not a url")],
            vec!["OTEL_EXPORTER_OTLP_ENDPOINT"],
        ),
        (
            "csv",
            vec![("NIXL_TELEMETRY_BUFFER_SIZE", "1000")],
            vec!["NIXL_TELEMETRY_BUFFER_SIZE"],
        ),
    ] {
        let o = run(exporters, &env);
        assert_fails(&o, 2, &needles);
        assert_eq!(
            std::fs::read(&ring).unwrap(),
            b"earlier ring",
            "{exporters}"
        );
        assert!(!rings.join("dev.csv").exists(), "{exporters}");
    }
    // `prometheus` on one fixed port for two links (two agents).
    let o = telering()
        .args(["bridge", "--dir"])
        .arg(&rings)
        .args(["--exporter", "csv,prometheus"])
        .env("NIXL_TELEMETRY_PROMETHEUS_PORT", "9464")
        .arg(format!("dev=file:{}", capture.display()))
        .arg(format!("dev2=file:{}", capture.display()))
        .output()
        .unwrap();
    assert_fails(&o, 2, &["prometheus_mp", "9464", "2 links"]);
    assert_eq!(std::fs::read(&ring).unwrap(), b"earlier ring");
    assert!(!rings.join("dev2").exists());
    // A CSV file that is not one telering wrote is refused, and kept as it is.
    std::fs::write(rings.join("dev.csv"), "someone else's data\n").unwrap();
    let o = run("csv", &[]);
    assert_fails(&o, 2, &["dev.csv"]);
    assert_eq!(
        std::fs::read_to_string(rings.join("dev.csv")).unwrap(),
        "someone else's data\n"
    );
    assert_eq!(std::fs::read(&ring).unwrap(), b"earlier ring");
}

/// The sum of the values of `name` in `events`.
fn value_sum(events: &[Event], name: &str) -> u64 {
    events
        .iter()
        .filter(|e| e.name() == Ok(name))
        .map(Event::value)
        .sum()
}

#[test]
fn two_noisy_links_exported_through_prometheus_mp_serve_each_agents_sums_and_losses() {
    use std::os::unix::net::UnixListener;
    let dir = scratch();
    let rings = dir.path().join("rings");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let devices = [("mp-a", 31u64), ("mp-b", 32)];
    let sockets: Vec<_> = devices
        .iter()
        .map(|(agent, _)| {
            let path = dir.path().join(format!("{agent}.sock"));
            (UnixListener::bind(&path).unwrap(), path)
        })
        .collect();
    let mut cmd = telering();
    cmd.args(["bridge", "--json", "--dir"])
        .arg(&rings)
        .args(["--exporter", "prometheus_mp"])
        .env("NIXL_TELEMETRY_MULTIPROC_DIR", dir.path().join("mp"))
        .env("NIXL_TELEMETRY_PROMETHEUS_PORT", port.to_string())
        .env("NIXL_TELEMETRY_PROMETHEUS_LOCAL", "true")
        .args(sockets.iter().map(|(_, p)| format!("unix:{}", p.display())))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let bridge = common::Running::spawn(&mut cmd);
    let mut conns = Vec::new();
    for ((agent, seed), (listener, _)) in devices.iter().zip(&sockets) {
        let (mut conn, _) = listener.accept().unwrap();
        let damaged = damage(&v2_stream(agent, &mix(3000, *seed)), *seed);
        std::io::Write::write_all(&mut conn, &damaged).unwrap();
        conns.push(conn);
    }
    let addr: std::net::SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    for (agent, _) in devices {
        let ring = rings.join(agent);
        wait_for_end_marker(&ring);
        // What the ring holds (read by an observer: the bridge still writes it).
        let mut observer =
            telering_shm::ObserverReader::open(&ring, telering_core::ObserverStart::Oldest)
                .unwrap();
        let mut held = Vec::new();
        while let Some(e) = observer.poll().unwrap() {
            held.push(e);
        }
        let tx = value_sum(&held, "agent_tx_bytes");
        let lost: u64 = [
            "telering_link_lost_damaged",
            "telering_link_lost_missing",
            "telering_link_lost_unknown_name",
        ]
        .iter()
        .map(|n| value_sum(&held, n))
        .sum();
        assert!(lost > 0, "{agent}");
        let damaged = value_sum(&held, "telering_link_lost_damaged");
        let series = |family: &str| format!("{family}{{agent_name=\"{agent}\"");
        let served = common::eventually(Duration::from_secs(30), || {
            let page = common::try_http_get(addr, "/metrics").ok()?;
            let got = (
                common::sample(&page, &series("agent_tx_bytes_total"))? as u64,
                common::sample(&page, &series("agent_telemetry_events_dropped_total"))? as u64,
                common::sample(
                    &page,
                    &series("agent_system_event_telering_link_lost_damaged_total"),
                )? as u64,
            );
            (got == (tx, lost, damaged)).then_some(got)
        });
        assert_eq!(served, Some((tx, lost, damaged)), "{agent}");
    }
    drop(conns);
    let s = stop(bridge);
    assert_eq!(s.len(), 2);
    for link in &s {
        assert_eq!(link["exporters"][0]["name"], "prometheus_mp", "{link}");
        assert_eq!(link["exporters"][0]["lost"].as_u64(), Some(0), "{link}");
    }
}
