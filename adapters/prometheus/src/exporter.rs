//! The `prometheus` exporter of one agent, for the telering-std registry.
//!
//! `NIXL_TELEMETRY_EXPORTER=prometheus` makes the agent's flush thread hand every batch
//! to [`PrometheusExporter`], which folds it into a [`MetricModel`] and serves it on
//! `http://<addr>:<NIXL_TELEMETRY_PROMETHEUS_PORT>/metrics` (default 9090, on 0.0.0.0
//! unless `NIXL_TELEMETRY_PROMETHEUS_LOCAL=true`).
//!
//! The telemetry never takes the agent down: when the port cannot be bound (in use, not
//! permitted) the factory logs a warning through `log` and still returns a working
//! exporter without an endpoint, so the agent keeps running and its in-process capture
//! (`get_xfer_telemetry`) is untouched. Its statistics show it: one export error,
//! `exporter_failing` set, and every event counted in `events_undelivered`, never in
//! `events_exported`. With an endpoint, an event counts as delivered once it is folded
//! into the metrics the endpoint serves (a scrape is not awaited). The exporter reports the address it actually
//! serves — the bound port, also when port 0 picked one — through
//! [`Exporter::endpoint`] (and `Telemetry::exporter_endpoint`), and no address at all
//! when it serves none. Only a malformed variable is an error, so that
//! a typo is fixed rather than silently ignored.
//!
//! Routes ([`Exporter::export_routes`]) go into the model; the kept slow transfers
//! also become OpenMetrics exemplars of the `telering_route_xfer_time_us` buckets they
//! fall in, with the trace and span ids of the spans the `otlp` exporter pushes for
//! them. Only a scrape that negotiates `application/openmetrics-text` (Prometheus does
//! by default) sees them; the Prometheus text format 0.0.4 page is unchanged.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};

use telering_core::Event;
use telering_std::export::{Delivery, ExportError, Exporter, ExporterContext, ExporterRegistry};

use crate::config::{ConfigError, ENV_BUCKETS, ENV_LOCAL, ENV_PORT, PrometheusConfig};
use crate::format::Format;
use crate::format::exemplars::RouteExemplars;
use crate::http::{HttpLimits, MetricsServer, MetricsSource};
use crate::model::{MetricModel, SharedModel};

/// The name the exporter is registered under.
pub const EXPORTER_NAME: &str = "prometheus";

/// Registers the `prometheus` and `prometheus_mp` exporters in `registry`.
///
/// ```
/// use telering_std::ExporterRegistry;
/// let mut registry = ExporterRegistry::with_builtins();
/// telering_prometheus::register(&mut registry);
/// assert!(registry.contains("prometheus"));
/// assert!(registry.contains("prometheus_mp"));
/// ```
pub fn register(registry: &mut ExporterRegistry) {
    registry.register(EXPORTER_NAME, PrometheusExporter::factory);
    registry.register(
        crate::multiproc::EXPORTER_NAME,
        crate::multiproc::MultiprocExporter::factory,
    );
}

/// Folds an agent's events into metrics and serves them over HTTP.
#[derive(Debug)]
pub struct PrometheusExporter {
    agent_name: String,
    model: SharedModel,
    server: Option<MetricsServer>,
    delivery: Arc<Delivery>,
    exemplars: Arc<Mutex<RouteExemplars>>,
}

/// The exporter's page: the model, with the routes' exemplars added to the
/// OpenMetrics rendering (`format::exemplars`).
#[derive(Debug)]
struct ExporterPage {
    model: SharedModel,
    exemplars: Arc<Mutex<RouteExemplars>>,
    agent_name: String,
    hostname: String,
}

impl MetricsSource for ExporterPage {
    fn render(&self, format: Format) -> String {
        let page = self.model.render(format);
        match format {
            Format::PrometheusText => page,
            Format::OpenMetrics => self
                .exemplars
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .splice(page, &self.agent_name, &self.hostname),
        }
    }
}

impl PrometheusExporter {
    /// Starts the exporter for `agent_name` with `config`. Never fails: if the endpoint
    /// cannot start, a warning is logged and the exporter runs without one
    /// ([`PrometheusExporter::local_addr`] is then `None`).
    ///
    /// ```
    /// use telering_prometheus::{PrometheusConfig, PrometheusExporter};
    /// let config = PrometheusConfig { port: 0, local: true, ..PrometheusConfig::default() };
    /// let exporter = PrometheusExporter::start("agent-1", &config);
    /// assert!(exporter.local_addr().unwrap().ip().is_loopback());
    /// ```
    pub fn start(agent_name: &str, config: &PrometheusConfig) -> PrometheusExporter {
        let hostname = crate::hostname();
        let mut model = MetricModel::new(hostname.clone(), config.buckets.clone());
        model.add_agent(agent_name);
        let model = model.into_shared();
        let delivery = Arc::new(Delivery::default());
        let exemplars = Arc::new(Mutex::new(RouteExemplars::default()));
        let page = ExporterPage {
            model: model.clone(),
            exemplars: exemplars.clone(),
            agent_name: agent_name.to_owned(),
            hostname,
        };
        let server = match MetricsServer::start(config.bind_addr(), page, HttpLimits::default()) {
            Ok(server) => Some(server),
            Err(e) => {
                log::warn!(
                    "telemetry exporter `prometheus` for agent {agent_name}: {e}; the agent keeps running and its in-process telemetry stays available, but no metrics are served"
                );
                delivery.fail();
                None
            }
        };
        PrometheusExporter {
            agent_name: agent_name.to_owned(),
            model,
            server,
            delivery,
            exemplars,
        }
    }

    /// The [`telering_std::ExporterFactory`]: reads the configuration from the
    /// context's environment and starts the exporter.
    pub fn factory(context: &ExporterContext) -> Result<Box<dyn Exporter>, ExportError> {
        for variable in [ENV_PORT, ENV_LOCAL, ENV_BUCKETS] {
            if context.env.get(variable).is_err() {
                return Err(ExportError::Config {
                    exporter: EXPORTER_NAME.into(),
                    variable: variable.into(),
                    value: "(not UTF-8)".into(),
                    message: "the value is not valid UTF-8".into(),
                });
            }
        }
        let config = PrometheusConfig::from_lookup(|name| context.env.get(name).ok().flatten());
        let config = config.map_err(config_error)?;
        Ok(Box::new(PrometheusExporter::start(
            &context.agent_name,
            &config,
        )))
    }

    /// The bound endpoint address, or `None` when the endpoint could not start.
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.server.as_ref().map(MetricsServer::local_addr)
    }

    /// The model (for rendering in process; the endpoint adds the routes' exemplars
    /// to its OpenMetrics pages, the model's own rendering has none).
    pub fn model(&self) -> SharedModel {
        self.model.clone()
    }
}

fn config_error(e: ConfigError) -> ExportError {
    let (variable, value) = e.variable_and_value();
    ExportError::Config {
        exporter: EXPORTER_NAME.into(),
        variable: variable.into(),
        value,
        message: e.to_string(),
    }
}

impl Exporter for PrometheusExporter {
    fn name(&self) -> &str {
        EXPORTER_NAME
    }

    fn export(&mut self, batch: &[Event]) -> Result<(), ExportError> {
        // Upstream losses arrive in the batch as `agent_telemetry_events_dropped`, which
        // the model counts; `add_dropped` is therefore left at its default.
        self.model.lock().ingest(&self.agent_name, batch);
        self.delivery.accept(batch);
        if self.server.is_some() {
            self.delivery.delivered_up_to(self.delivery.accepted());
        }
        Ok(())
    }

    /// Delivered means: folded into the metrics the endpoint serves; nothing is
    /// delivered without an endpoint.
    fn delivery(&self) -> Option<Arc<Delivery>> {
        Some(self.delivery.clone())
    }

    fn endpoint(&self) -> Option<String> {
        self.local_addr()
            .map(|addr| format!("http://{addr}/metrics"))
    }

    fn export_routes(
        &mut self,
        report: &telering_std::route::RouteReport,
    ) -> Result<(), ExportError> {
        self.model
            .lock()
            .set_routes(&self.agent_name, report.clone());
        self.exemplars
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .record(&self.agent_name, report);
        Ok(())
    }

    fn flush(&mut self) -> Result<(), ExportError> {
        Ok(())
    }

    fn shutdown(&mut self) -> Result<(), ExportError> {
        if let Some(server) = self.server.take() {
            server.shutdown();
        }
        Ok(())
    }
}
