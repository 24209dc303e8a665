//! NIXL's configuration file, read from real files: which file is chosen, the
//! environment's precedence, TOML's types, and every error naming the file (and key).

use std::path::{Path, PathBuf};
use std::time::Duration;
use telering_std::config::{ConfigFileError, FileSearch, Mode, Source};
use telering_std::{ConfigError, EnvError, EnvSource, Telemetry};

/// A search with no `NIXL_CONFIG_FILE`, `home` as `HOME` and `system` as the system file.
fn search(home: &Path, system: &Path) -> FileSearch {
    FileSearch {
        explicit: None,
        home: Some(home.to_path_buf()),
        system: system.to_path_buf(),
    }
}

fn write(path: &Path, text: &str) -> PathBuf {
    std::fs::write(path, text).unwrap();
    path.to_path_buf()
}

#[test]
fn the_named_file_wins_then_home_then_the_system_file() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir(&home).unwrap();
    let system = dir.path().join("etc-nixl.cfg");
    let mut s = search(&home, &system);
    assert_eq!(s.locate().unwrap(), None, "no file anywhere: none");

    write(&system, "NIXL_TELEMETRY_BUFFER_SIZE = 64");
    assert_eq!(s.locate().unwrap(), Some(system.clone()));
    let home_file = write(&home.join(".nixl.cfg"), "NIXL_TELEMETRY_BUFFER_SIZE = 128");
    assert_eq!(s.locate().unwrap(), Some(home_file));
    let named = write(
        &dir.path().join("named.toml"),
        "NIXL_TELEMETRY_BUFFER_SIZE = 256",
    );
    s.explicit = Some(named.clone().into());
    assert_eq!(s.locate().unwrap(), Some(named));

    let env = EnvSource::empty().with_file_from(&s);
    let config = Telemetry::builder("a")
        .apply_env(&env)
        .unwrap()
        .resolve()
        .unwrap();
    assert_eq!(config.buffer_size, 256);

    // A blank NIXL_CONFIG_FILE is unset, and a blank HOME has no file.
    s.explicit = Some(" ".into());
    s.home = Some(PathBuf::new());
    assert_eq!(s.locate().unwrap(), Some(system));
}

#[test]
fn a_named_file_that_is_missing_is_an_error_naming_it_and_no_fallback() {
    let dir = tempfile::tempdir().unwrap();
    let system = write(&dir.path().join("sys.cfg"), "NIXL_TELEMETRY_ENABLE = true");
    let missing = dir.path().join("missing.cfg");
    let s = FileSearch {
        explicit: Some(missing.clone().into()),
        home: None,
        system,
    };
    let env = EnvSource::from_pairs([("NIXL_TELEMETRY_DIR", "/t")]).with_file_from(&s);
    let e = Telemetry::builder("a").apply_env(&env).unwrap_err();
    assert!(matches!(
        &e,
        ConfigError::ConfigFile(ConfigFileError::Missing { path }) if *path == missing
    ));
    assert_eq!(
        e.to_string(),
        format!(
            "NIXL_CONFIG_FILE={}: no such file; create it or unset NIXL_CONFIG_FILE",
            missing.display()
        )
    );
    // Every read answers the error, and check() reports it.
    assert!(matches!(
        env.get("NIXL_TELEMETRY_DIR"),
        Err(EnvError::ConfigFile(_))
    ));
    assert!(env.check().is_err());
}

#[test]
fn a_file_that_is_not_toml_is_an_error_naming_the_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let cfg = write(
        &home.join(".nixl.cfg"),
        "NIXL_TELEMETRY_ENABLE = true\nNIXL_TELEMETRY_DIR = /dev/shm\n",
    );
    let env = EnvSource::empty().with_file_from(&search(home, &home.join("none")));
    let e = Telemetry::builder("a").apply_env(&env).unwrap_err();
    let text = e.to_string();
    assert!(
        text.starts_with(&format!(
            "configuration file {} is not valid TOML: ",
            cfg.display()
        )),
        "{text}"
    );
    assert!(text.contains("line 2"), "{text}");

    // A file that exists but is a directory cannot be read: an error, not a fallback.
    std::fs::remove_file(&cfg).unwrap();
    std::fs::create_dir(&cfg).unwrap();
    let env = EnvSource::empty().with_file_from(&search(home, &home.join("none")));
    let e = Telemetry::builder("a").apply_env(&env).unwrap_err();
    assert!(
        matches!(&e, ConfigError::ConfigFile(ConfigFileError::Unreadable { path, .. }) if *path == cfg),
        "{e}"
    );
}

#[test]
fn a_value_that_does_not_convert_names_the_file_and_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = write(
        &dir.path().join("n.cfg"),
        "NIXL_TELEMETRY_BUFFER_SIZE = 1000\n",
    );
    let s = FileSearch {
        explicit: Some(cfg.clone().into()),
        home: None,
        system: "/nonexistent".into(),
    };
    let env = EnvSource::empty().with_file_from(&s);
    let e = Telemetry::builder("a").apply_env(&env).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "configuration file {}, key NIXL_TELEMETRY_BUFFER_SIZE: NIXL_TELEMETRY_BUFFER_SIZE=1000 is not a power of two; use 512 or 1024",
            cfg.display()
        )
    );

    // Each variable's own rule applies to the file's text: a negative integer, a
    // float where an integer belongs, an unknown clock, an unknown exporter.
    for (line, expect) in [
        (
            "NIXL_TELEMETRY_RUN_INTERVAL = -5",
            "key NIXL_TELEMETRY_RUN_INTERVAL: NIXL_TELEMETRY_RUN_INTERVAL=-5 is not a positive number",
        ),
        (
            "NIXL_TELEMETRY_BUFFER_SIZE = 1024.0",
            "key NIXL_TELEMETRY_BUFFER_SIZE: NIXL_TELEMETRY_BUFFER_SIZE=1024.0 is not a number",
        ),
        (
            "TELERING_CLOCK = 'sundial'",
            "key TELERING_CLOCK: TELERING_CLOCK=sundial is not a clock",
        ),
        (
            "NIXL_TELEMETRY_ENABLE = true\nNIXL_TELEMETRY_EXPORTER = 'carrier_pigeon'",
            "key NIXL_TELEMETRY_EXPORTER: NIXL_TELEMETRY_EXPORTER=carrier_pigeon is not a known exporter",
        ),
        (
            "NIXL_TELEMETRY_ENABLE = true\nNIXL_TELEMETRY_EXPORTER = ['buffer', 'nop', 'Buffer']",
            "key NIXL_TELEMETRY_EXPORTER: buffer is listed twice in NIXL_TELEMETRY_EXPORTER=buffer,nop,Buffer (entries 1 and 3",
        ),
        (
            "NIXL_TELEMETRY_ENABLE = true\nNIXL_TELEMETRY_EXPORTER = 'nop,,csv'",
            "key NIXL_TELEMETRY_EXPORTER: NIXL_TELEMETRY_EXPORTER=nop,,csv has an empty entry at position 2",
        ),
    ] {
        write(&cfg, line);
        let env = EnvSource::empty().with_file_from(&s);
        let e = Telemetry::builder("a")
            .apply_env(&env)
            .and_then(|b| b.resolve())
            .unwrap_err();
        let text = e.to_string();
        assert!(
            text.starts_with(&format!("configuration file {}, ", cfg.display())),
            "{text}"
        );
        assert!(text.contains(expect), "{line}: {text}");
    }

    // A table where a value belongs is the file's own error, naming the key.
    write(&cfg, "[NIXL_TELEMETRY_DIR]\npath = '/x'\n");
    let e = Telemetry::builder("a")
        .apply_env(&EnvSource::empty().with_file_from(&s))
        .unwrap_err();
    assert!(
        matches!(&e, ConfigError::ConfigFile(ConfigFileError::Value { key, found: "table", .. }) if key == "NIXL_TELEMETRY_DIR"),
        "{e}"
    );
}

#[test]
fn toml_types_and_strings_are_both_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("n.cfg");
    let s = FileSearch {
        explicit: Some(cfg.clone().into()),
        home: None,
        system: "/nonexistent".into(),
    };
    for text in [
        "NIXL_TELEMETRY_ENABLE = true\nNIXL_TELEMETRY_BUFFER_SIZE = 8192\nNIXL_TELEMETRY_RUN_INTERVAL = 25\nNIXL_TELEMETRY_EXPORTER = 'nop'",
        "NIXL_TELEMETRY_ENABLE = 'yes'\nNIXL_TELEMETRY_BUFFER_SIZE = '8192'\nNIXL_TELEMETRY_RUN_INTERVAL = \" 25\\n\"\nNIXL_TELEMETRY_EXPORTER = 'NOP'",
    ] {
        write(&cfg, text);
        let env = EnvSource::empty().with_file_from(&s);
        let config = Telemetry::builder("a")
            .apply_env(&env)
            .unwrap()
            .resolve()
            .unwrap();
        assert_eq!(
            config.mode,
            Mode::Export {
                exporter: "nop".into()
            },
            "{text}"
        );
        assert_eq!(config.buffer_size, 8192, "{text}");
        assert_eq!(config.run_interval, Duration::from_millis(25), "{text}");
    }
}

#[test]
fn the_environment_wins_over_the_file_and_sources_say_which_is_which() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = write(
        &dir.path().join("n.cfg"),
        "NIXL_TELEMETRY_BUFFER_SIZE = 8192\nNIXL_TELEMETRY_RUN_INTERVAL = 25\nNIXL_TELEMETRY_DIR = '/from/file'\nUCX_TLS = 'rc'\n",
    );
    let s = FileSearch {
        explicit: Some(cfg.clone().into()),
        home: None,
        system: "/nonexistent".into(),
    };
    let env = EnvSource::from_pairs([
        ("NIXL_TELEMETRY_BUFFER_SIZE", "512"),
        ("NIXL_TELEMETRY_DIR", "  "), // blank: unset, so the file's value applies
    ])
    .with_file_from(&s);
    let config = Telemetry::builder("a")
        .apply_env(&env)
        .unwrap()
        .resolve()
        .unwrap();
    assert_eq!(config.buffer_size, 512);
    assert_eq!(config.run_interval, Duration::from_millis(25));
    assert_eq!(config.dir, Some(PathBuf::from("/from/file")));
    assert_eq!(
        env.source("NIXL_TELEMETRY_BUFFER_SIZE"),
        Some(Source::Environment)
    );
    assert_eq!(
        env.source("NIXL_TELEMETRY_RUN_INTERVAL"),
        Some(Source::File(cfg.clone()))
    );
    assert_eq!(
        env.source("NIXL_TELEMETRY_DIR"),
        Some(Source::File(cfg.clone()))
    );
    assert_eq!(env.source("NIXL_TELEMETRY_ENABLE"), None);
    assert_eq!(
        env.source("UCX_TLS"),
        None,
        "other programs' keys are not taken"
    );
    assert_eq!(env.config_file(), Some(cfg.as_path()));
    assert_eq!(
        env.names().collect::<Vec<_>>(),
        [
            "NIXL_TELEMETRY_BUFFER_SIZE",
            "NIXL_TELEMETRY_DIR",
            "NIXL_TELEMETRY_RUN_INTERVAL"
        ]
    );
}

#[test]
fn a_telemetry_configured_by_the_file_exports_through_it() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let cfg = write(
        &dir.path().join("n.cfg"),
        &format!(
            "NIXL_TELEMETRY_ENABLE = true\nNIXL_TELEMETRY_EXPORTER = 'csv'\nNIXL_TELEMETRY_DIR = '{}'\n",
            out.display()
        ),
    );
    let s = FileSearch {
        explicit: Some(cfg.into()),
        home: None,
        system: "/nonexistent".into(),
    };
    let env = EnvSource::empty().with_file_from(&s);
    let telemetry = Telemetry::builder("agent-f")
        .apply_env(&env)
        .unwrap()
        .build()
        .unwrap();
    telemetry.update_tx_bytes(4096);
    drop(telemetry);
    let csv = std::fs::read_to_string(out.join("agent-f.csv")).unwrap();
    assert!(csv.contains(",TRANSFER,agent_tx_bytes,4096\r\n"), "{csv}");
}
