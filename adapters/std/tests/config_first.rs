//! Nothing is created, replaced or truncated before the whole configuration is known
//! to be valid: every exporter of a list is checked first, so a mistake in any of
//! them (an exporter's own variable, a foreign CSV file, a link planted in its place)
//! leaves a ring file with unread events exactly as it was.

use std::path::Path;
use telering_std::export::{ExportError, ExporterContext, NopExporter};
use telering_std::{ConfigError, EnvSource, Telemetry, TelemetryBuilder};

/// A ring file `dir/agent` of 8192 slots holding 50 events no reader took; its bytes.
fn ring_with_unread_events(dir: &Path) -> Vec<u8> {
    let telemetry = Telemetry::builder("agent")
        .enabled(true)
        .dir(dir)
        .buffer_size(8192)
        .build()
        .unwrap();
    for i in 0..50 {
        telemetry.update_tx_bytes(i);
    }
    drop(telemetry);
    std::fs::read(dir.join("agent")).unwrap()
}

/// A builder of 4096 slots (another shape: opening would replace the ring) for
/// `list`, with `picky`, an exporter whose check refuses `PICKY_LEVEL` other than 1.
fn builder(dir: &Path, list: &str, env: &[(&str, &str)]) -> TelemetryBuilder {
    let env = EnvSource::from_pairs(env.iter().copied());
    let mut builder = TelemetryBuilder::from_env("agent", &env)
        .unwrap()
        .enabled(true)
        .dir(dir)
        .exporter(list);
    builder.registry_mut().register_checked(
        "picky",
        |ctx: &ExporterContext| match ctx.env.get_trimmed("PICKY_LEVEL") {
            Ok(Some(v)) if v != "1" => Err(ExportError::Config {
                exporter: "picky".into(),
                variable: "PICKY_LEVEL".into(),
                value: v,
                message: "use 1".into(),
            }),
            _ => Ok(()),
        },
        NopExporter::factory,
    );
    builder
}

/// A list, its environment, what to put at `agent.csv` (given the link target), and
/// what the error names.
type Case = (
    &'static str,
    &'static [(&'static str, &'static str)],
    fn(&Path, &Path),
    &'static str,
);

#[test]
fn a_mistake_in_any_exporter_of_the_list_leaves_the_ring_file_as_it_was() {
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path();
    let before = ring_with_unread_events(dir);
    let csv = dir.join("agent.csv");
    let elsewhere = dir.join("elsewhere");
    std::fs::write(&elsewhere, "keep").unwrap();
    let cases: [Case; 4] = [
        (
            "buffer,picky",
            &[("PICKY_LEVEL", "2")],
            |_, _| {},
            "PICKY_LEVEL",
        ),
        (
            "picky,buffer",
            &[("PICKY_LEVEL", "x")],
            |_, _| {},
            "PICKY_LEVEL",
        ),
        (
            "buffer,csv",
            &[],
            |csv, _| std::fs::write(csv, "my,own\n").unwrap(),
            "does not start with the header",
        ),
        (
            "buffer,csv",
            &[],
            |csv, target| std::os::unix::fs::symlink(target, csv).unwrap(),
            "agent.csv",
        ),
    ];
    for (list, env, setup, named) in cases {
        let _ = std::fs::remove_file(&csv);
        setup(&csv, &elsewhere);
        let error = builder(dir, list, env).build().map(drop).unwrap_err();
        assert!(
            matches!(error, ConfigError::ExporterStart { .. }),
            "{list}: {error:?}"
        );
        assert!(error.to_string().contains(named), "{list}: {error}");
        assert!(
            std::fs::read(dir.join("agent")).unwrap() == before,
            "{list}: the ring file changed"
        );
        assert_eq!(std::fs::read_to_string(&elsewhere).unwrap(), "keep");
    }
    // Configured right, the list starts.
    let _ = std::fs::remove_file(&csv);
    let telemetry = builder(dir, "buffer,picky,csv", &[("PICKY_LEVEL", "1")])
        .build()
        .unwrap();
    telemetry.update_tx_bytes(1);
    drop(telemetry);
    assert!(csv.exists());
}
