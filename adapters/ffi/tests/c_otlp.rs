//! `NIXL_TELEMETRY_EXPORTER=otlp` in a C program: `record.c`, compiled against the
//! library, pushes to oteltest's OTLP/HTTP sink from PyPI (decoded by the official
//! `opentelemetry-proto` package; the sink and script of telering-otlp's tests). `.ci/run`
//! runs these tests (named `c_agent_otlp_*`) with that virtual environment's `python3`.

mod common;
#[path = "../../otlp/tests/common/sink.rs"]
mod sink;

use common::{compile, program, run_ok, xfer_line};
use sink::{Sink, free_port};

#[test]
#[ignore = "needs an OTLP receiver from PyPI"]
fn c_agent_otlp_pushes_what_the_c_program_recorded() {
    let port = free_port();
    let sink = Sink::start(port, &[]);
    let scratch = tempfile::tempdir().unwrap();
    let exe = compile("record.c", scratch.path());
    let mut cmd = program(&exe);
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("OTEL_") {
            cmd.env_remove(name);
        }
    }
    let output = run_ok(
        cmd.env("NIXL_TELEMETRY_ENABLE", "y")
            .env("NIXL_TELEMETRY_EXPORTER", "otlp")
            .env("NIXL_TELEMETRY_BUFFER_SIZE", "16384")
            .env(
                "OTEL_EXPORTER_OTLP_ENDPOINT",
                format!("http://127.0.0.1:{port}"),
            )
            .env("OTEL_SERVICE_NAME", "c-trainer"),
    );
    let stdout = String::from_utf8(output.stdout).unwrap();
    let [_, post_us, xfer_us, bytes, _] = xfer_line(&stdout);
    assert!(stdout.contains("stats 7613 0"), "nothing dropped: {stdout}");
    // The default interval is a minute: what arrives is the push at telering_destroy.
    let tx = 2000 * 100 + 400 * 4096 + bytes;
    let (line, _) = sink.wait_for_sum("agent_tx_bytes_total|c-agent", tx);
    let sums = &line["sums"];
    assert_eq!(sums["agent_tx_requests_num_total|c-agent"], 401);
    assert_eq!(sums["agent_xfer_time_total|c-agent"], 400 * 10 + xfer_us);
    assert_eq!(
        sums["agent_xfer_post_time_total|c-agent"],
        400 * 2 + post_us
    );
    assert_eq!(sums["agent_errors_total|c-agent|backend"], 3);
    assert_eq!(line["resource"]["service.name"], "c-trainer");
}
