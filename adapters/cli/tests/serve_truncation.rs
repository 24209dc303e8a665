//! `telering serve` on 2048 rings that another process keeps truncating and growing
//! again under it: more mappings than one chunk of the SIGBUS guard's table holds, so
//! every one of them must still be protected. The server neither dies nor stops
//! answering. (Its log shows the faults it caught: "truncated to 3687 bytes while
//! mapped" is a read that faulted while the file was short and grew back since.)

mod common;

use common::*;
use std::fs::OpenOptions;
use std::io::BufReader;
use std::time::{Duration, Instant};
use telering_core::{Category, Event, builtin};
use telering_shm::{ShmWriter, WriterOptions};

const RINGS: usize = 2048;

/// Series of agents that served an `agent_tx_bytes` total.
fn agents_served(page: &str) -> usize {
    page.lines()
        .filter(|l| l.starts_with("agent_tx_bytes_total{"))
        .count()
}

#[test]
fn serve_survives_two_thousand_rings_truncated_and_grown_again_under_it() {
    let dir = scratch();
    let rings = dir.path().join("rings");
    std::fs::create_dir(&rings).unwrap();
    // One 64-slot ring with three events, copied 2048 times.
    let template = {
        let made = dir.path().join("template");
        let mut o = WriterOptions::new(&made, "t");
        o.capacity = 64;
        let mut writer = ShmWriter::create(o).unwrap();
        let tx = Event::new(1, Category::Transfer, builtin::AGENT_TX_BYTES.name, 64);
        writer.write_batch(&[tx; 3]);
        writer.close().unwrap();
        std::fs::read(made.join("t")).unwrap()
    };
    let paths: Vec<_> = (0..RINGS).map(|i| rings.join(format!("r{i:04}"))).collect();
    for path in &paths {
        std::fs::write(path, &template).unwrap();
    }
    let err_file = dir.path().join("err.txt");
    // One descriptor per followed ring: lift the soft limit to the hard one.
    let mut serve = Running::spawn(
        std::process::Command::new("sh")
            .args(["-c", "ulimit -n \"$(ulimit -Hn)\"; exec \"$0\" \"$@\""])
            .arg(telering().get_program())
            .args(["serve", "--port", "0", "--local", "--dir"])
            .arg(&rings)
            .stdout(std::process::Stdio::piped())
            .stderr(std::fs::File::create(&err_file).unwrap()),
    );
    let mut out = BufReader::new(serve.child.stdout.take().unwrap());
    let addr = addr_in(&wait_for_line(&mut out, "serving"));
    eventually(Duration::from_secs(60), || {
        (agents_served(&http_get(addr, "/metrics")) == RINGS).then_some(())
    })
    .expect("every ring followed");

    // Shrink every file to nothing and grow it back, over and over, while the server
    // polls and rescans them.
    let files: Vec<_> = paths
        .iter()
        .map(|p| OpenOptions::new().write(true).open(p).unwrap())
        .collect();
    let end = Instant::now() + Duration::from_secs(5);
    let mut rounds = 0;
    while Instant::now() < end {
        for file in &files {
            file.set_len(0).unwrap();
            file.set_len(template.len() as u64).unwrap();
        }
        rounds += 1;
        assert_eq!(serve.child.try_wait().unwrap(), None, "serve died");
    }
    assert!(rounds > 1, "{rounds} rounds");
    let page = http_get(addr, "/metrics");
    assert!(page.starts_with("HTTP/1.1 200"), "{page:.200}");
    assert_eq!(serve.child.try_wait().unwrap(), None, "serve died");
    let err = std::fs::read_to_string(&err_file).unwrap();
    assert!(!err.contains("not protected"), "{err}");
    signal(&serve.child, "-INT");
    assert_eq!(serve.wait(), Some(0), "{err}");
}
