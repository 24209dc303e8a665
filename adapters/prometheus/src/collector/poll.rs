//! One poll of one agent: a restart, what was published, what the writer lost (from
//! its trailer), liveness, and the end of its series.

use std::os::unix::fs::MetadataExt;
use std::time::Instant;

use telering_core::Event;
use telering_core::builtin::AGENT_TELEMETRY_EVENTS_DROPPED;

use super::fd_limit::ring_budget;
use super::log_text::{self, ErrorText};
use super::{
    BATCH, Expired, Liveness, MAX_EVENTS_PER_POLL, NodeCollector, fingerprint, telering_event,
    writer_alive,
};

/// An in-band loss report (`agent_telemetry_events_dropped`).
fn is_drop_report(event: &Event) -> bool {
    event.name_field() == AGENT_TELEMETRY_EVENTS_DROPPED.name.field()
}

impl NodeCollector {
    /// Reads one agent's ring; with `check`, also looks for a restart and probes
    /// liveness (a `stat` and a lock probe, so only at the rescan cadence).
    pub(super) fn poll_agent(&mut self, name: &str, check: bool) {
        self.poll_route_file(name);
        let Some(agent) = self.followed.get_mut(name) else {
            return;
        };
        // A different file under the name: a new writer replaced the ring (another
        // size or layout). The reader reads the old file to its end, then takes up
        // the new one itself, past the events carried from the old one (read there
        // already), so the agent's series go on, as over a ring reused in place.
        let current = if check {
            std::fs::metadata(&agent.path)
                .ok()
                .map(|m| (m.dev(), m.ino()))
        } else {
            Some(agent.key)
        };
        // The writer's own losses come from its trailer (see the `losses` module), so
        // in-band reports are read, but neither delivered events nor charged again.
        let trailer = agent.reader.trailer();
        let charge_reports = trailer.is_none();
        // Read what was published.
        let mut unexported = 0u64;
        let mut total = 0usize;
        while total < MAX_EVENTS_PER_POLL {
            self.scratch.clear();
            let scratch = &mut self.scratch;
            let typed = !agent.reader.generation().has_names();
            let read = agent.reader.read_batch(BATCH, |r| match r {
                Ok(e) => {
                    let mut e = if typed { telering_event(e) } else { e };
                    if is_drop_report(&e) && !charge_reports {
                        e.set_value(0);
                    }
                    scratch.push(e);
                }
                Err(e) => {
                    log::debug!("{}", ErrorText::of(&e));
                    unexported += 1;
                }
            });
            let n = match read {
                Ok(n) => {
                    if agent.read_error.take().is_some() {
                        log::info!(
                            "agent {}: {} reads again",
                            log_text::name(name),
                            log_text::path(&agent.path)
                        );
                    }
                    n
                }
                Err(e) => {
                    let kind = std::mem::discriminant(&e);
                    if agent.read_error.replace(kind) == Some(kind) {
                        log::debug!(
                            "reading agent {}: {}",
                            log_text::name(name),
                            ErrorText::of(&e)
                        );
                    } else {
                        log::warn!(
                            "reading agent {}: {}",
                            log_text::name(name),
                            ErrorText::of(&e)
                        );
                    }
                    0
                }
            };
            if !self.scratch.is_empty() {
                self.model.lock().ingest_delivered(name, &self.scratch);
            }
            total += n;
            if n < BATCH {
                break;
            }
        }
        agent.events_read += total as u64;
        let followed = agent.reader.file_id();
        if followed != agent.key && current == Some(followed) {
            log::info!(
                "agent {}: its ring was replaced by a new writer; its series go on",
                log_text::name(name)
            );
            agent.key = followed;
        }
        let before = agent.losses;
        let lost = agent.reader.lost();
        let mut model = self.model.lock();
        if lost > agent.lost_counted {
            model.count_missed(name, lost - agent.lost_counted);
            agent.losses.missed += lost - agent.lost_counted;
            agent.lost_counted = lost;
        }
        if unexported > 0 {
            model.count_unexported(name, unexported);
            agent.losses.unexported += unexported;
        }
        // The trailer read after the events: a report read above was counted in it
        // before it was published.
        let trailer = agent.reader.trailer().or(trailer);
        if let Some(t) = &trailer {
            // Unread events a replacing writer could not carry are its losses, but
            // those this reader had read in the replaced file were delivered.
            let replaced = agent.reader.replaced_already_read();
            agent.replaced_pending += replaced - agent.replaced_seen;
            agent.replaced_seen = replaced;
            let mut added = agent.writer.advance(t);
            agent.replaced_pending = added.forgive_staging(agent.replaced_pending);
            let dropped = added.charge(&mut agent.losses);
            if dropped > 0 {
                model.add_dropped(name, dropped);
            }
        } else {
            // Only in-band reports say what a writer without a trailer dropped: NIXL's
            // own writer reports the events its staging queue dropped.
            agent.losses.staging = model
                .counter(name, AGENT_TELEMETRY_EVENTS_DROPPED.name.as_str())
                .unwrap_or(0);
        }
        agent.recent.note(&before, &agent.losses);
        let print = trailer.as_ref().map(fingerprint);
        let active = total > 0 || print != agent.fingerprint;
        agent.fingerprint = print;
        // Liveness, at the rescan cadence.
        let probed = check.then(|| {
            let info = agent.reader.info();
            let alive = current.is_some() && writer_alive(&info, self.options.stale_after);
            // Gone without a clean close: a released lock or a stale heartbeat. A
            // removed file whose trailer says closed was closed cleanly; one without a
            // trailer gives no verdict.
            agent.writer_failed = !alive && info.trailer.as_ref().is_some_and(|t| !t.clean_close);
            (info, alive)
        });
        model.set_exporter_failing(name, agent.writer_failed || agent.read_error.is_some());
        drop(model);
        // A dead writer's file that is written again (a short run under the same name)
        // keeps its series for another TTL.
        if let Liveness::Dead { since } = &mut agent.liveness {
            if active {
                *since = Instant::now();
            }
        }
        let Some((info, alive)) = probed else {
            return;
        };
        agent.info = Some(info);
        match (agent.liveness, alive) {
            (Liveness::Alive, false) => {
                log::info!(
                    "agent {}: writer gone; its series are dropped in {:?}",
                    log_text::name(name),
                    self.options.ttl
                );
                agent.liveness = Liveness::Dead {
                    since: Instant::now(),
                };
            }
            (Liveness::Dead { .. }, true) => agent.liveness = Liveness::Alive,
            (Liveness::Dead { since }, false) if since.elapsed() >= self.options.ttl => {
                log::info!("agent {}: series dropped", log_text::name(name));
                // The reader is kept (with its descriptor) only while there is room.
                let open = self.followed.len() + self.kept_readers();
                let budget = ring_budget(self.options.limits.max_connections);
                let room = open <= self.options.max_agents && open < budget;
                if let Some(agent) = self.followed.remove(name) {
                    if current.is_some() {
                        self.expired.insert(
                            name.to_owned(),
                            Expired {
                                key: agent.key,
                                reader: room.then_some(agent.reader),
                                writer: agent.writer,
                                fingerprint: agent.fingerprint,
                            },
                        );
                    }
                }
                self.model.lock().remove_agent(name);
            }
            _ => {}
        }
    }
}
