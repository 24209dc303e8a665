//! `telering bridge LINK...`: firmware links become agents like any other.
//!
//! Each link (a serial device, a TCP or Unix socket, a file or standard input, a
//! memory window; see [`spec`]) gets a thread. Its frames (link format versions 1 and
//! 2, `docs/LINK.md`) are decoded, device timestamps are mapped to host wall-clock
//! microseconds from the device's clock frames ([`clock`]), and the events go into a
//! ring file `DIR/AGENT` under the agent name the device gives in its hello
//! ([`sink`]), so `stat`, `top`, `serve` and NIXL's readers see them. Every event that
//! did not arrive is counted in that ring with its cause. A link whose device goes
//! away is opened again with a backoff (100 ms doubling up to `--max-backoff`); files
//! and standard input end their link at their end. The first Ctrl-C or SIGTERM
//! stops reading: each link takes what is already waiting, writes it, and closes its
//! ring; a second one ends the process at once.

pub mod clock;
pub mod export;
pub mod link;
pub mod sink;
pub mod source;
pub mod spec;

use crate::CliError;
use clap::Args;
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::time::Duration;
use telering_core::text::Escaped;

/// `telering bridge`.
#[derive(Debug, Args)]
pub struct BridgeArgs {
    /// Links, each SOURCE or NAME=SOURCE; SOURCE is serial:PATH or serial:PATH@BAUD, tcp:HOST:PORT, unix:PATH, file:PATH, mem:PATH or mem:PATH@OFFSET, or - (stdin).
    #[arg(value_name = "LINK", required = true)]
    pub links: Vec<String>,
    /// Telemetry directory for the rings [env: NIXL_TELEMETRY_DIR, default ./telemetry].
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Ring capacity in events (a power of two) [default: the ring writer's].
    #[arg(long, value_name = "N")]
    pub capacity: Option<u32>,
    /// Longest wait between two attempts to open a link that went away (1s, 500ms).
    #[arg(long, value_parser = crate::demo::parse_duration, value_name = "TIME", default_value = "5s")]
    pub max_backoff: Duration,
    /// Print the final summary as one JSON object per link.
    #[arg(long)]
    pub json: bool,
    /// Also export each link's agent through these exporters (otlp, prometheus, prometheus_mp, csv, nop, or a comma-separated list), configured as any agent's [env: TELERING_EXPORTERS].
    #[arg(long, value_name = "NAME")]
    pub exporter: Option<String>,
}

/// Runs the bridge until every link ended or `stop` is set, then prints one summary
/// line per link. Exit status: 1 if a link ended on an error.
pub fn bridge(
    args: BridgeArgs,
    env: &telering_std::EnvSource,
    stop: &AtomicBool,
    out: &mut dyn Write,
) -> Result<(), CliError> {
    let env_dir = env
        .get_trimmed(telering_std::config::vars::DIR)
        .map_err(|e| CliError::Config(e.to_string()))?;
    let specs = args
        .links
        .iter()
        .map(|l| spec::parse_link(l))
        .collect::<Result<Vec<_>, _>>()?;
    if let Some(c) = args.capacity {
        if !c.is_power_of_two() || c < 2 {
            return Err(CliError::Usage(format!(
                "--capacity {c} is not a power of two of at least 2; use {}",
                c.max(2).next_power_of_two()
            )));
        }
    }
    let stdin_links = specs
        .iter()
        .filter(|s| s.source == spec::Source::Stdin)
        .count();
    if stdin_links > 1 {
        return Err(CliError::Usage(
            "standard input (-) can be only one link".into(),
        ));
    }
    check_windows(&specs)?;
    let dir = crate::ring_dir::RingDir::choose(args.dir, env_dir).path;
    // The whole exporter configuration, for every link's first agent name, before
    // anything is created.
    let export = export::ExportPlan::resolve(args.exporter.as_deref(), env, &dir)?;
    if let Some(plan) = &export {
        plan.check_links(specs.len())?;
        for s in &specs {
            plan.check(&s.name)?;
        }
    }
    let options = link::LinkOptions {
        dir,
        capacity: args.capacity,
        max_backoff: args.max_backoff,
        poll: Duration::from_millis(100),
        export: export.map(std::sync::Arc::new),
    };
    let reports: Vec<link::LinkReport> = std::thread::scope(|scope| {
        let handles: Vec<_> = specs
            .iter()
            .map(|s| {
                let options = &options;
                std::thread::Builder::new()
                    .name("telering-link".into())
                    .spawn_scoped(scope, move || link::run_link(s, options, stop))
            })
            .collect();
        handles
            .into_iter()
            .zip(&specs)
            .map(|(h, s)| {
                match h.map_err(|e| e.to_string()).and_then(|h| {
                    h.join()
                        .map_err(|_| "the link's thread panicked".to_owned())
                }) {
                    Ok(report) => report,
                    Err(error) => link::LinkReport {
                        link: s.text.clone(),
                        agent: s.name.clone(),
                        counts: sink::LinkCounts::default(),
                        connections: 0,
                        error: Some(error),
                        exporters: Vec::new(),
                    },
                }
            })
            .collect()
    });
    for r in &reports {
        write_report(out, r, args.json).map_err(CliError::Output)?;
    }
    out.flush().map_err(CliError::Output)?;
    let failed: Vec<String> = reports
        .iter()
        .filter_map(|r| {
            r.error
                .as_ref()
                .map(|e| format!("link {}: {}", Escaped::new(&r.link), Escaped::new(e)))
        })
        .collect();
    if failed.is_empty() {
        Ok(())
    } else {
        Err(CliError::Telemetry {
            message: failed.join("; "),
            config: false,
        })
    }
}

/// A memory window that holds no ring at its offset (past the file's end, no ring
/// header there, a device the kernel cannot map) is a usage error (exit 2), found
/// before anything is created; a file that cannot be opened at all is the link's own
/// failure, as for every other source.
fn check_windows(specs: &[spec::LinkSpec]) -> Result<(), CliError> {
    for s in specs {
        if let spec::Source::Memory { path, offset } = &s.source {
            if let Err(e @ telering_shm::ShmError::Window { .. }) = link::open_window(path, *offset)
            {
                return Err(CliError::Usage(format!(
                    "link `{}`: {}",
                    Escaped::new(&s.text),
                    Escaped::new(&e.to_string())
                )));
            }
        }
    }
    Ok(())
}

fn write_report(out: &mut dyn Write, r: &link::LinkReport, json: bool) -> std::io::Result<()> {
    let c = &r.counts;
    if json {
        let value = serde_json::json!({
            "link": r.link,
            "agent": r.agent,
            "connections": r.connections,
            "events": c.events,
            "written": c.written,
            "lost_damaged": c.lost_damaged,
            "lost_missing": c.lost_missing,
            "lost_unknown_name": c.lost_unknown_name,
            "lost_device_full": c.lost_device_full,
            "device_reports": c.device_reports,
            "lost_host_ring_full": c.lost_host_ring_full,
            "lost_lapped": c.lost_lapped,
            "lapped_unknown": c.lapped_unknown,
            "resets": c.resets,
            "noise_bytes": c.noise_bytes,
            "exporters": r.exporters.iter().map(|x| serde_json::json!({
                "name": x.name,
                "delivered": x.events_delivered,
                "lost": x.events_dropped.saturating_add(x.exporter_dropped),
                "undelivered": x.events_undelivered,
                "export_errors": x.export_errors,
                "endpoint": x.endpoint,
            })).collect::<Vec<_>>(),
            "error": r.error,
        });
        writeln!(out, "{value}")
    } else {
        writeln!(
            out,
            "link {} → {}: {} events ({} written), lost: {} damaged, {} missing, {} unknown name, {} device ring full, {} host ring full, {} lapped, {} times an unknown number lapped; {} resets, {} noise bytes{}{}",
            Escaped::new(&r.link),
            Escaped::new(&r.agent),
            c.events,
            c.written,
            c.lost_damaged,
            c.lost_missing,
            c.lost_unknown_name,
            c.lost_device_full,
            c.lost_host_ring_full,
            c.lost_lapped,
            c.lapped_unknown,
            c.resets,
            c.noise_bytes,
            r.exporters
                .iter()
                .map(|x| format!(
                    "; {}: {} delivered, {} lost, {} undelivered",
                    Escaped::new(&x.name),
                    x.events_delivered,
                    x.events_dropped.saturating_add(x.exporter_dropped),
                    x.events_undelivered
                ))
                .collect::<String>(),
            r.error
                .as_ref()
                .map(|e| format!("; ended on: {}", Escaped::new(e)))
                .unwrap_or_default()
        )
    }
}
