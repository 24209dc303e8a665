//! The configuration rules, variable by variable.

use super::*;
use crate::ExporterRegistry;
use crate::config::{EnvSource, vars};
use crate::export::ExportError;
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

fn env(pairs: &[(&str, &str)]) -> EnvSource {
    EnvSource::from_pairs(pairs.iter().map(|&(k, v)| (k, v)))
}

fn resolve(pairs: &[(&str, &str)]) -> Result<ResolvedConfig, ConfigError> {
    TelemetryBuilder::from_env("agent", &env(pairs))?.resolve()
}

fn export(exporter: &str) -> Mode {
    Mode::Export {
        exporter: exporter.to_string(),
    }
}

#[test]
fn every_enabling_word_enables_in_any_case_and_with_whitespace() {
    for word in crate::parse::TRUE_WORDS {
        for v in [
            word.to_string(),
            word.to_ascii_uppercase(),
            format!("  {word}\t"),
        ] {
            let b = TelemetryBuilder::from_env("a", &env(&[(vars::ENABLE, &v)])).unwrap();
            assert!(b.warnings().is_empty(), "{v:?}");
            assert_eq!(b.resolve().unwrap().mode, Mode::Capture, "{v:?}");
        }
    }
}

#[test]
fn disabling_words_and_unset_disable_without_warning() {
    assert_eq!(resolve(&[]).unwrap().mode, Mode::Disabled);
    for v in crate::parse::FALSE_WORDS.into_iter().chain(["", "  "]) {
        let b = TelemetryBuilder::from_env("a", &env(&[(vars::ENABLE, v)])).unwrap();
        assert!(b.warnings().is_empty(), "{v:?}");
        assert_eq!(b.resolve().unwrap().mode, Mode::Disabled);
    }
}

#[test]
fn an_unrecognized_enable_value_disables_and_warns_naming_it() {
    let b = TelemetryBuilder::from_env("a", &env(&[(vars::ENABLE, "ture")])).unwrap();
    assert_eq!(b.resolve().unwrap().mode, Mode::Disabled);
    assert_eq!(
        b.warnings(),
        [ConfigWarning::UnrecognizedEnable {
            value: "ture".into()
        }]
    );
    let text = b.warnings()[0].to_string();
    assert!(text.starts_with("NIXL_TELEMETRY_ENABLE=ture "), "{text}");
}

#[test]
fn metric_patterns_matching_no_builtin_warn_and_are_kept() {
    let b = TelemetryBuilder::from_env(
        "a",
        &env(&[(
            vars::ENABLED_METRICS,
            " agent_tx_*, my_counter ,NIXL_ERR_*,, ",
        )]),
    )
    .unwrap();
    assert_eq!(
        b.warnings(),
        [ConfigWarning::MetricMatchesNoBuiltin {
            pattern: "my_counter".into()
        }]
    );
    // Trimmed, as every value is; the allowlist skips the empty items.
    assert_eq!(
        b.resolve().unwrap().enabled_metrics,
        "agent_tx_*, my_counter ,NIXL_ERR_*,,"
    );
    let b = TelemetryBuilder::from_env("a", &env(&[(vars::ENABLED_METRICS, " ")])).unwrap();
    assert!(b.warnings().is_empty());
}

#[test]
fn buffer_size_must_be_a_power_of_two_within_bounds() {
    assert_eq!(resolve(&[]).unwrap().buffer_size, 4096);
    assert_eq!(
        resolve(&[(vars::BUFFER_SIZE, " 2 ")]).unwrap().buffer_size,
        2
    );
    let max = MAX_BUFFER_SIZE.to_string();
    assert_eq!(
        resolve(&[(vars::BUFFER_SIZE, &max)]).unwrap().buffer_size,
        MAX_BUFFER_SIZE
    );
    let cases = [
        (
            "1000",
            "NIXL_TELEMETRY_BUFFER_SIZE=1000 is not a power of two; use 512 or 1024",
        ),
        (
            "0",
            "NIXL_TELEMETRY_BUFFER_SIZE=0 is too small; use 2 or a larger power of two, such as 4096",
        ),
        (
            "1",
            "NIXL_TELEMETRY_BUFFER_SIZE=1 is too small; use 2 or a larger power of two, such as 4096",
        ),
        (
            "2097152",
            "NIXL_TELEMETRY_BUFFER_SIZE=2097152 is above the maximum; use 1048576 or a smaller power of two",
        ),
        (
            "-4",
            "NIXL_TELEMETRY_BUFFER_SIZE=-4 is not a number; use a power of two from 2 to 1048576, such as 4096",
        ),
        (
            "lots",
            "NIXL_TELEMETRY_BUFFER_SIZE=lots is not a number; use a power of two from 2 to 1048576, such as 4096",
        ),
    ];
    for (value, message) in cases {
        let err = resolve(&[(vars::BUFFER_SIZE, value)]).unwrap_err();
        assert_eq!(err.to_string(), message);
    }
    let err = TelemetryBuilder::new("a")
        .buffer_size(3)
        .resolve()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "NIXL_TELEMETRY_BUFFER_SIZE=3 is not a power of two; use 2 or 4"
    );
}

#[test]
fn run_interval_must_be_a_positive_number_of_milliseconds() {
    assert_eq!(
        resolve(&[]).unwrap().run_interval,
        Duration::from_millis(100)
    );
    assert_eq!(
        resolve(&[(vars::RUN_INTERVAL, "250")])
            .unwrap()
            .run_interval,
        Duration::from_millis(250)
    );
    let err = resolve(&[(vars::RUN_INTERVAL, "86400001")]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "NIXL_TELEMETRY_RUN_INTERVAL=86400001 is longer than a day; use at most 86400000 milliseconds"
    );
    assert_eq!(
        resolve(&[(vars::RUN_INTERVAL, "86400000")])
            .unwrap()
            .run_interval,
        MAX_RUN_INTERVAL
    );
    let err = resolve(&[(vars::RUN_INTERVAL, "99999999999999999999")]).unwrap_err();
    assert!(
        matches!(&err, ConfigError::RunIntervalTooLong { .. }),
        "{err}"
    );
    for value in ["0", "-5", "fast", "1.5", "+100", "1e2"] {
        let err = resolve(&[(vars::RUN_INTERVAL, value)]).unwrap_err();
        assert!(
            matches!(&err, ConfigError::RunIntervalInvalid { value: v } if v == value),
            "{err}"
        );
        assert!(
            err.to_string()
                .starts_with(&format!("NIXL_TELEMETRY_RUN_INTERVAL={value} is not")),
            "{err}"
        );
    }
    let err = TelemetryBuilder::new("a")
        .run_interval(Duration::ZERO)
        .resolve()
        .unwrap_err();
    assert!(err.to_string().contains("NIXL_TELEMETRY_RUN_INTERVAL=0"));
}

#[test]
fn exporter_names_match_in_any_case_and_unknown_ones_list_the_choices() {
    let on = (vars::ENABLE, "1");
    assert_eq!(
        resolve(&[on, (vars::EXPORTER, "Csv")]).unwrap().mode,
        export("csv")
    );
    assert_eq!(
        resolve(&[on, (vars::EXPORTER, " NOP ")]).unwrap().mode,
        export("nop")
    );
    let err = resolve(&[on, (vars::EXPORTER, "prometheus")]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "NIXL_TELEMETRY_EXPORTER=prometheus is not a known exporter; use one of: buffer, csv, nop"
    );
}

#[test]
fn an_exporter_listed_twice_in_any_case_is_refused_naming_it() {
    let on = (vars::ENABLE, "1");
    for (list, entries) in [
        ("buffer,buffer", "1 and 2"),
        ("nop, Buffer,csv,BUFFER", "2 and 4"),
    ] {
        let e = resolve(&[on, (vars::DIR, "/tmp/t"), (vars::EXPORTER, list)]).unwrap_err();
        assert!(
            matches!(e, ConfigError::ExporterListedTwice { .. }),
            "{e:?}"
        );
        assert_eq!(
            e.to_string(),
            format!(
                "buffer is listed twice in NIXL_TELEMETRY_EXPORTER={list} (entries {entries}, names matched ignoring case); list each exporter once"
            )
        );
    }
    // The builder's own list follows the same rule.
    let b = TelemetryBuilder::new("a").enabled(true).exporter("nop,NOP");
    assert!(matches!(
        b.resolve(),
        Err(ConfigError::ExporterListedTwice { .. })
    ));
}

#[test]
fn an_empty_entry_in_the_exporter_list_is_refused_naming_its_position() {
    let on = (vars::ENABLE, "1");
    for (list, position) in [
        ("buffer,,nop", 2),
        (",nop", 1),
        ("nop,", 2),
        ("nop, ,csv", 2),
    ] {
        let e = resolve(&[on, (vars::DIR, "/tmp/t"), (vars::EXPORTER, list)]).unwrap_err();
        assert!(
            matches!(e, ConfigError::ExporterListEmptyEntry { .. }),
            "{e:?}"
        );
        assert_eq!(
            e.to_string(),
            format!(
                "NIXL_TELEMETRY_EXPORTER={list} has an empty entry at position {position}; remove the extra comma or name an exporter there"
            )
        );
    }
    // Blank as a whole is unset, as for every variable.
    assert_eq!(
        resolve(&[on, (vars::EXPORTER, "  ")]).unwrap().mode,
        Mode::Capture
    );
}

#[test]
fn a_registered_exporter_can_be_chosen() {
    fn factory(
        ctx: &crate::export::ExporterContext,
    ) -> Result<Box<dyn crate::export::Exporter>, ExportError> {
        crate::export::NopExporter::factory(ctx)
    }
    let mut registry = ExporterRegistry::with_builtins();
    registry.register("Prometheus", factory);
    let b = TelemetryBuilder::new("a")
        .registry(registry)
        .apply_env(&env(&[(vars::ENABLE, "y"), (vars::EXPORTER, "PROMETHEUS")]))
        .unwrap();
    assert_eq!(b.resolve().unwrap().mode, export("prometheus"));
}

#[test]
fn directory_without_exporter_selects_the_buffer_exporter() {
    let r = resolve(&[(vars::ENABLE, "y"), (vars::DIR, "/tmp/t")]).unwrap();
    assert_eq!(r.mode, export("buffer"));
    assert_eq!(r.dir, Some(PathBuf::from("/tmp/t")));
    // An explicit exporter wins over the default.
    let r = resolve(&[
        (vars::ENABLE, "y"),
        (vars::DIR, "/tmp/t"),
        (vars::EXPORTER, "csv"),
    ])
    .unwrap();
    assert_eq!(r.mode, export("csv"));
}

#[test]
fn enabled_without_exporter_or_directory_captures_in_process() {
    let r = resolve(&[(vars::ENABLE, "y"), (vars::DIR, "  ")]).unwrap();
    assert_eq!(r.mode, Mode::Capture);
}

#[test]
fn capture_telemetry_with_environment_disabled_captures_without_exporting() {
    let b = TelemetryBuilder::new("a")
        .capture_telemetry(true)
        .apply_env(&env(&[
            (vars::ENABLE, "no"),
            (vars::EXPORTER, "csv"),
            (vars::DIR, "/tmp/t"),
        ]))
        .unwrap();
    assert_eq!(b.resolve().unwrap().mode, Mode::Capture);
}

#[test]
fn flags_applied_after_the_environment_win() {
    let b =
        TelemetryBuilder::from_env("a", &env(&[(vars::ENABLE, "y"), (vars::BUFFER_SIZE, "64")]))
            .unwrap()
            .buffer_size(128)
            .enabled(false);
    let r = b.resolve().unwrap();
    assert_eq!((r.buffer_size, r.mode), (128, Mode::Disabled));
}

/// The rule of `crate::parse`, applied to every numeric variable: trimmed, blank
/// is unset, and only plain decimal digits are a number.
#[test]
fn every_numeric_variable_follows_the_one_parsing_rule() {
    for (variable, default) in [(vars::BUFFER_SIZE, 4096u64), (vars::RUN_INTERVAL, 100)] {
        let read = |v: &str| {
            resolve(&[(variable, v)]).map(|r| {
                if variable == vars::BUFFER_SIZE {
                    u64::from(r.buffer_size)
                } else {
                    r.run_interval.as_millis() as u64
                }
            })
        };
        for (value, want) in [
            ("1024", Some(1024)),
            (" 1024", Some(1024)),
            ("1024\n", Some(1024)),
            ("\t1024 ", Some(1024)),
            ("01024", Some(1024)),
            ("", Some(default)),
            ("  \n", Some(default)),
            ("+1024", None),
            ("-1024", None),
            ("1024.0", None),
            ("1e3", None),
            ("0x400", None),
            ("1_024", None),
            ("1024ms", None),
            ("18446744073709551616", None),
        ] {
            match (read(value), want) {
                (Ok(got), Some(want)) => assert_eq!(got, want, "{variable}={value:?}"),
                (Err(e), None) => {
                    let text = e.to_string();
                    assert!(
                        text.starts_with(&format!("{variable}={}", value.trim())),
                        "{variable}={value:?}: {text}"
                    );
                }
                (got, want) => panic!("{variable}={value:?}: {got:?}, expected {want:?}"),
            }
        }
    }
    // Blank is unset for the other variables too.
    let r = resolve(&[
        (vars::ENABLE, " "),
        (vars::EXPORTER, "\n"),
        (vars::DIR, " "),
        (vars::ENABLED_METRICS, "  "),
    ])
    .unwrap();
    assert_eq!(
        (r.mode, r.dir, r.enabled_metrics),
        (Mode::Disabled, None, String::new())
    );
    // Trimmed, the directory too.
    let r = resolve(&[(vars::ENABLE, " yes\n"), (vars::DIR, " /tmp/t\n")]).unwrap();
    assert_eq!(
        (r.mode, r.dir),
        (export("buffer"), Some(PathBuf::from("/tmp/t")))
    );
}

#[test]
fn a_value_that_is_not_utf8_is_an_error_naming_the_variable() {
    use std::os::unix::ffi::OsStringExt;
    let env = EnvSource::from_pairs([(vars::DIR, OsString::from_vec(vec![0x66, 0xff]))]);
    let err = TelemetryBuilder::from_env("a", &env).unwrap_err();
    assert_eq!(
        err.to_string(),
        "NIXL_TELEMETRY_DIR is not valid UTF-8; set it to plain text"
    );
}

#[test]
fn agent_names_that_cannot_name_a_file_are_refused() {
    let too_long = "n".repeat(256);
    for bad in ["", ".", "..", "a/b", "a\0b", too_long.as_str()] {
        let err = TelemetryBuilder::new(bad).resolve().unwrap_err();
        assert!(matches!(err, ConfigError::AgentName { .. }), "{bad:?}");
    }
    assert!(TelemetryBuilder::new("n".repeat(251)).resolve().is_ok());
}

/// Configuration knows no exporter's file-naming rule: a name that fits the ring
/// file but not `<agent>.csv` is refused by the `csv` exporter itself.
#[test]
fn each_exporter_checks_the_name_of_the_file_it_writes() {
    let dir = tempfile::tempdir().unwrap();
    let too_long_for_csv = "n".repeat(252);
    let build = |exporter: &str| {
        TelemetryBuilder::new(too_long_for_csv.as_str())
            .enabled(true)
            .exporter(exporter)
            .dir(dir.path())
            .build()
    };
    assert!(
        TelemetryBuilder::new(too_long_for_csv.as_str())
            .resolve()
            .is_ok()
    );
    let err = build("csv").unwrap_err();
    assert!(
        matches!(
            &err,
            ConfigError::ExporterStart {
                source: ExportError::TargetName { .. },
                ..
            }
        ),
        "{err}"
    );
    assert!(
        err.to_string().contains("choose a shorter agent name"),
        "{err}"
    );
    let ring = build("buffer").unwrap();
    drop(ring);
    assert!(dir.path().join(&too_long_for_csv).exists());
}

#[test]
fn the_directory_default_is_the_registrys_choice() {
    let mut registry = ExporterRegistry::empty();
    crate::export::CsvExporter::register(&mut registry);
    let b = TelemetryBuilder::new("a")
        .registry(registry.clone())
        .enabled(true)
        .dir("/tmp/t");
    let err = b.resolve().unwrap_err();
    assert_eq!(
        err.to_string(),
        "NIXL_TELEMETRY_DIR is set but no exporter writes it by default; set NIXL_TELEMETRY_EXPORTER to one of: csv"
    );
    registry.set_dir_default("csv");
    let r = b.registry(registry).resolve().unwrap();
    assert_eq!(r.mode, export("csv"));
}

#[test]
fn the_process_environment_snapshot_keeps_only_telemetry_variables() {
    let env = EnvSource::from_process();
    assert!(env.names().all(crate::config::is_telering_variable));
}

#[test]
fn a_list_from_another_variable_or_a_flag_is_refused_naming_that_one() {
    let b = TelemetryBuilder::new("a").enabled(true).dir("/tmp/t");
    for (variable, list, want) in [
        (
            "TELERING_EXPORTERS",
            "nop,,csv",
            "TELERING_EXPORTERS=nop,,csv has an empty entry at position 2",
        ),
        (
            "TELERING_EXPORTERS",
            "csv,CSV",
            "csv is listed twice in TELERING_EXPORTERS=csv,CSV",
        ),
        (
            "TELERING_EXPORTERS",
            "nop,kafka",
            "TELERING_EXPORTERS=kafka is not a known exporter",
        ),
        (
            "--exporter",
            "",
            "--exporter is empty; name one or more exporters",
        ),
        (
            "--exporter",
            " , ",
            "--exporter=, has an empty entry at position 1",
        ),
    ] {
        let e = b
            .clone()
            .exporter_from(variable, list)
            .resolve()
            .unwrap_err();
        assert!(e.to_string().starts_with(want), "{variable}={list:?}: {e}");
        assert!(!e.to_string().contains(vars::EXPORTER), "{e}");
    }
    // `exporter` names NIXL's variable again.
    let e = b
        .exporter_from("--exporter", "x")
        .exporter("")
        .resolve()
        .unwrap_err();
    assert!(
        e.to_string()
            .starts_with("NIXL_TELEMETRY_EXPORTER is empty"),
        "{e}"
    );
}
