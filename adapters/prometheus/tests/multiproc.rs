//! `prometheus_mp` with real rank processes: this test binary re-runs itself as each
//! rank (the `rank_process` entry below), records a known workload through
//! telering-std, and the tests scrape the shared port.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

const CHILD: &str = "TELERING_MP_TEST_RANK";

/// The rank side: records `TELERING_MP_TEST_TX` bytes (in three events), then follows
/// commands on stdin (`tx N`), answering `rank-flushed` after each flush; exits on EOF.
#[test]
fn rank_process() {
    let Ok(total) = std::env::var(CHILD) else {
        return;
    };
    use telering_std::{EnvSource, ExporterRegistry, Telemetry};
    let total: u64 = total.parse().unwrap();
    let mut registry = ExporterRegistry::with_builtins();
    telering_prometheus::register(&mut registry);
    let name = std::env::var("TELERING_MP_TEST_AGENT").unwrap();
    let telemetry = Telemetry::builder(name)
        .registry(registry)
        .apply_env(&EnvSource::from_process())
        .unwrap()
        .build()
        .unwrap();
    for part in [total / 2, total / 3, total - total / 2 - total / 3] {
        telemetry.update_tx_bytes(part);
    }
    telemetry.flush().unwrap();
    let mut out = std::io::stdout();
    writeln!(out, "rank-ready").unwrap();
    for line in std::io::stdin().lock().lines() {
        let line = line.unwrap();
        if let Some(n) = line.strip_prefix("tx ") {
            telemetry.update_tx_bytes(n.parse().unwrap());
            telemetry.flush().unwrap();
            writeln!(out, "rank-flushed").unwrap();
        }
    }
}

struct Rank {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    recorded: u64,
}

impl Rank {
    fn spawn(node: &Node, rank: usize, recorded: u64) -> Rank {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "rank_process", "--nocapture", "--test-threads=1"])
            .env(CHILD, recorded.to_string())
            .env("TELERING_MP_TEST_AGENT", format!("rank-{rank}"))
            .env("NIXL_TELEMETRY_ENABLE", "y")
            .env("NIXL_TELEMETRY_EXPORTER", "prometheus_mp")
            .env("NIXL_TELEMETRY_MULTIPROC_DIR", &node.dir)
            .env("NIXL_TELEMETRY_PROMETHEUS_PORT", node.port.to_string())
            .env("NIXL_TELEMETRY_PROMETHEUS_LOCAL", "true")
            .env("NIXL_TELEMETRY_MP_STALE_TTL", &node.ttl)
            .env("LOCAL_RANK", rank.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut rank = Rank {
            child,
            stdin,
            stdout,
            recorded,
        };
        rank.expect_line("rank-ready");
        rank
    }

    fn expect_line(&mut self, want: &str) {
        loop {
            let mut line = String::new();
            assert_ne!(self.stdout.read_line(&mut line).unwrap(), 0, "rank exited");
            if line.trim_end().ends_with(want) {
                return;
            }
        }
    }

    fn send_tx(&mut self, bytes: u64) {
        writeln!(self.stdin, "tx {bytes}").unwrap();
        self.expect_line("rank-flushed");
        self.recorded += bytes;
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn kill(&mut self) {
        self.child.kill().unwrap(); // SIGKILL
        self.child.wait().unwrap();
    }
}

impl Drop for Rank {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A multiproc directory and port shared by a test's ranks.
struct Node {
    dir: PathBuf,
    port: u16,
    ttl: String,
}

impl Node {
    fn new(tag: &str, ttl: &str) -> Node {
        let dir = std::env::temp_dir().join(format!("telering-mp-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        Node {
            dir,
            port,
            ttl: ttl.into(),
        }
    }

    fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    /// The page, or `None` while nobody serves.
    fn scrape(&self) -> Option<String> {
        let mut s = TcpStream::connect_timeout(&self.addr(), Duration::from_millis(500)).ok()?;
        s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
        s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            .ok()?;
        let mut page = String::new();
        s.read_to_string(&mut page).ok()?;
        page.starts_with("HTTP/1.1 200").then_some(page)
    }

    /// `agent_tx_bytes_total` by `local_rank`, with the series' `pid`.
    fn tx_by_rank(&self) -> Option<BTreeMap<String, (u32, u64)>> {
        Some(tx_by_rank(&self.scrape()?))
    }

    /// The pid the owner lock names.
    fn owner_pid(&self) -> Option<u32> {
        let text = std::fs::read_to_string(self.dir.join("owner.lock")).ok()?;
        text.strip_prefix("pid=")?.split(' ').next()?.parse().ok()
    }

    fn wait_for(&self, what: &str, timeout: Duration, mut ok: impl FnMut(&Node) -> bool) {
        let deadline = Instant::now() + timeout;
        while !ok(self) {
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}: {:?}",
                self.scrape()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn label<'a>(series: &'a str, name: &str) -> Option<&'a str> {
    let start = series.find(&format!("{name}=\""))? + name.len() + 2;
    let len = series[start..].find('"')?;
    Some(&series[start..start + len])
}

fn tx_by_rank(page: &str) -> BTreeMap<String, (u32, u64)> {
    page.lines()
        .filter(|l| l.starts_with("agent_tx_bytes_total{"))
        .filter_map(|l| {
            let (series, value) = l.rsplit_once(' ')?;
            let rank = label(series, "local_rank")?.to_string();
            let pid = label(series, "pid")?.parse().ok()?;
            Some((rank, (pid, value.parse().ok()?)))
        })
        .collect()
}

fn expected(ranks: &[Rank]) -> BTreeMap<String, (u32, u64)> {
    ranks
        .iter()
        .enumerate()
        .map(|(i, r)| (i.to_string(), (r.pid(), r.recorded)))
        .collect()
}

fn start_ranks(node: &Node, count: usize) -> Vec<Rank> {
    (0..count)
        .map(|i| Rank::spawn(node, i, 1000 * (i as u64 + 1) + 7))
        .collect()
}

#[test]
fn eight_ranks_on_one_port_serve_exact_per_rank_counters() {
    let node = Node::new("eight", "30");
    let mut ranks = start_ranks(&node, 8);
    let want = expected(&ranks);
    node.wait_for("8 exact ranks", Duration::from_secs(30), |n| {
        n.tx_by_rank() == Some(want.clone())
    });
    let page = node.scrape().unwrap();
    for family in [
        "agent_rx_bytes_total{",
        "agent_xfer_time_us_bucket{",
        "agent_errors_total{",
    ] {
        let series = page.lines().filter(|l| l.starts_with(family)).count();
        assert!(series >= 8, "{family}: {series} series");
    }
    for (i, rank) in ranks.iter_mut().enumerate() {
        rank.send_tx(i as u64 + 1);
    }
    let want = expected(&ranks);
    node.wait_for("the next workload", Duration::from_secs(30), |n| {
        n.tx_by_rank() == Some(want.clone())
    });
    let instances: std::collections::BTreeSet<&str> = page
        .lines()
        .filter(|l| l.starts_with("agent_tx_bytes_total{"))
        .filter_map(|l| label(l, "agent_instance"))
        .collect();
    assert_eq!(instances.len(), 8);
}

fn kill_owner(node: &Node, ranks: &mut Vec<Rank>) -> (Rank, Duration) {
    let owner = node.owner_pid().expect("an owner");
    let index = ranks
        .iter()
        .position(|r| r.pid() == owner)
        .expect("the owner is a rank");
    let mut dead = ranks.remove(index);
    dead.kill();
    let killed = Instant::now();
    let before = node.scrape();
    assert!(before.is_none(), "the port is closed with its owner");
    node.wait_for("a new owner", Duration::from_secs(10), |n| {
        n.scrape().is_some()
    });
    let back = killed.elapsed();
    assert_ne!(node.owner_pid(), Some(owner));
    (dead, back)
}

#[test]
fn killing_the_owner_brings_the_endpoint_back_within_two_seconds() {
    let node = Node::new("failover", "30");
    let mut ranks = start_ranks(&node, 4);
    let all = expected(&ranks);
    node.wait_for("4 exact ranks", Duration::from_secs(30), |n| {
        n.tx_by_rank() == Some(all.clone())
    });
    let (_dead, back) = kill_owner(&node, &mut ranks);
    eprintln!("endpoint back after {back:?}");
    assert!(
        back < Duration::from_secs(2),
        "endpoint back after {back:?}"
    );
    // Survivors unchanged, and the dead rank's last values stay within the TTL.
    assert_eq!(node.tx_by_rank(), Some(all.clone()));
    for rank in &mut ranks {
        rank.send_tx(3);
    }
    let mut want = all;
    for rank in &ranks {
        want.values_mut()
            .filter(|v| v.0 == rank.pid())
            .for_each(|v| v.1 = rank.recorded);
    }
    node.wait_for("survivors' new totals", Duration::from_secs(30), |n| {
        n.tx_by_rank() == Some(want.clone())
    });
}

#[test]
fn a_dead_non_owner_vanishes_after_the_ttl() {
    let node = Node::new("stale", "1");
    let mut ranks = start_ranks(&node, 3);
    let all = expected(&ranks);
    node.wait_for("3 exact ranks", Duration::from_secs(30), |n| {
        n.tx_by_rank() == Some(all.clone())
    });
    let owner = node.owner_pid().unwrap();
    let index = ranks.iter().position(|r| r.pid() != owner).unwrap();
    let mut victim = ranks.remove(index);
    let victim_pid = victim.pid();
    victim.kill();
    node.wait_for(
        "the dead rank's series to go",
        Duration::from_secs(10),
        |n| {
            n.tx_by_rank()
                .is_some_and(|m| m.values().all(|v| v.0 != victim_pid))
        },
    );
    // No lower bound on when: the TTL counts from the rank's last store write, which
    // a loaded machine may have delayed by more than a run interval before the kill,
    // so a bound measured from the kill would be a timing test that flakes.
    let left = node.tx_by_rank().unwrap();
    assert_eq!(left.len(), 2);
    assert!(!leftover_files(&node.dir, victim_pid));
}

fn leftover_files(dir: &Path, pid: u32) -> bool {
    std::fs::read_dir(dir).unwrap().flatten().any(|e| {
        e.file_name()
            .to_string_lossy()
            .contains(&format!("rank-{pid}-"))
    })
}

/// A Prometheus server scraping the node's port every second, killed on drop.
struct Prometheus {
    child: Child,
    dir: PathBuf,
    api: SocketAddr,
}

impl Prometheus {
    fn start(node: &Node) -> Prometheus {
        let dir = node.dir.with_extension("prometheus");
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("data")).unwrap();
        let config = format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: telering-node\n    static_configs:\n      - targets: ['{}']\n",
            node.addr()
        );
        std::fs::write(dir.join("prometheus.yml"), config).unwrap();
        let api = Node::new("api", "0").addr();
        let log = std::fs::File::create(dir.join("prometheus.log")).unwrap();
        let child = Command::new("prometheus")
            .arg(format!(
                "--config.file={}",
                dir.join("prometheus.yml").display()
            ))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg(format!("--web.listen-address={api}"))
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("prometheus is installed (Debian package `prometheus`)");
        Prometheus { child, dir, api }
    }

    /// The single value of an instant query, if there is exactly one.
    fn query(&self, query: &str) -> Option<String> {
        let encoded: String = query
            .bytes()
            .map(|b| match b {
                b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' => (b as char).to_string(),
                _ => format!("%{b:02X}"),
            })
            .collect();
        let mut s = TcpStream::connect(self.api).ok()?;
        s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
        write!(s, "GET /api/v1/query?query={encoded} HTTP/1.0\r\n\r\n").ok()?;
        let mut body = String::new();
        s.read_to_string(&mut body).ok()?;
        let results = body.matches("\"value\":[").count();
        if results != 1 {
            return None;
        }
        let value = body.split("\"value\":[").nth(1)?.split(',').nth(1)?;
        Some(value.split('"').nth(1)?.to_string())
    }

    fn wait_for(&self, query: &str, want: &str, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        loop {
            let got = self.query(query);
            if got.as_deref() == Some(want) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{query}: {got:?}, want {want}; log:\n{}",
                std::fs::read_to_string(self.dir.join("prometheus.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[test]
#[ignore = "needs prometheus"]
fn prometheus_stores_exact_rank_totals_across_two_failovers_without_resets() {
    let node = Node::new("e2e", "30");
    let mut ranks = start_ranks(&node, 4);
    let mut recorded: BTreeMap<u32, u64> = ranks.iter().map(|r| (r.pid(), r.recorded)).collect();
    let prometheus = Prometheus::start(&node);
    let check = |recorded: &BTreeMap<u32, u64>| {
        for (pid, total) in recorded {
            let query = format!("agent_tx_bytes_total{{pid=\"{pid}\"}}");
            prometheus.wait_for(&query, &total.to_string(), Duration::from_secs(60));
        }
    };
    check(&recorded);
    for round in 0..2u64 {
        let (dead, back) = kill_owner(&node, &mut ranks);
        eprintln!("failover {round}: endpoint back after {back:?}");
        assert!(
            back < Duration::from_secs(2),
            "endpoint back after {back:?}"
        );
        assert_eq!(recorded[&dead.pid()], dead.recorded);
        for rank in &mut ranks {
            rank.send_tx(100 + round);
            recorded.insert(rank.pid(), rank.recorded);
        }
        check(&recorded);
    }
    let series = recorded.len().to_string();
    prometheus.wait_for(
        "count(agent_tx_bytes_total)",
        &series,
        Duration::from_secs(10),
    );
    prometheus.wait_for(
        "sum(resets(agent_tx_bytes_total[10m]))",
        "0",
        Duration::from_secs(10),
    );
}
