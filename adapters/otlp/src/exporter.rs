//! The `otlp` exporter of one agent, for the telering-std registry.

use std::sync::Arc;
use telering_core::Event;
use telering_prometheus::config::ENV_BUCKETS;
use telering_prometheus::{Buckets, MetricModel, SharedModel};
use telering_std::export::{Delivery, ExportError, Exporter, ExporterContext, ExporterRegistry};

use crate::config::OtlpConfig;
use crate::push::Pusher;

/// The name the exporter is registered under.
pub const EXPORTER_NAME: &str = "otlp";

/// Registers the `otlp` exporter in `registry`.
///
/// ```
/// use telering_std::ExporterRegistry;
/// let mut registry = ExporterRegistry::with_builtins();
/// telering_otlp::register(&mut registry);
/// assert!(registry.contains("otlp"));
/// ```
pub fn register(registry: &mut ExporterRegistry) {
    registry.register_checked(EXPORTER_NAME, OtlpExporter::check, OtlpExporter::factory);
}

/// Folds an agent's events into metrics and pushes them to a collector.
#[derive(Debug)]
pub struct OtlpExporter {
    agent_name: String,
    model: SharedModel,
    endpoint: String,
    pusher: Pusher,
}

impl OtlpExporter {
    /// Starts the push thread for `agent_name`, histograms over `buckets`.
    ///
    /// ```
    /// use telering_otlp::{OtlpConfig, OtlpExporter};
    /// let config = OtlpConfig::from_lookup(|_| None).unwrap();
    /// let exporter = OtlpExporter::start("agent-1", config, Default::default()).unwrap();
    /// assert_eq!(exporter.endpoint_url(), "http://localhost:4318/v1/metrics");
    /// ```
    pub fn start(
        agent_name: &str,
        config: OtlpConfig,
        buckets: Buckets,
    ) -> std::io::Result<OtlpExporter> {
        let mut model = MetricModel::new(telering_prometheus::hostname(), buckets);
        model.add_agent(agent_name);
        let model = model.into_shared();
        let endpoint = config.endpoint.clone();
        let pusher = Pusher::start_counting(model.clone(), config, Arc::default())?;
        Ok(OtlpExporter {
            agent_name: agent_name.to_owned(),
            model,
            endpoint,
            pusher,
        })
    }

    /// The [`telering_std::ExporterCheck`]: every `OTEL_*` variable and
    /// `NIXL_TELEMETRY_HISTOGRAM_BUCKETS_US` parsed as the factory parses them, with
    /// nothing started, so that a list such as `buffer,otlp` is refused before the
    /// ring file is touched.
    ///
    /// ```
    /// use telering_std::{EnvSource, ExporterContext};
    /// let mut ctx = ExporterContext::new("a");
    /// ctx.env = EnvSource::from_pairs([("OTEL_EXPORTER_OTLP_TIMEOUT", "abc")]);
    /// let e = telering_otlp::OtlpExporter::check(&ctx).unwrap_err();
    /// assert!(e.to_string().contains("OTEL_EXPORTER_OTLP_TIMEOUT"), "{e}");
    /// ```
    pub fn check(context: &ExporterContext) -> Result<(), ExportError> {
        settings(context).map(drop)
    }

    /// The [`telering_std::ExporterFactory`]: `OTEL_*` from the context's environment or else the process's,
    /// `NIXL_TELEMETRY_HISTOGRAM_BUCKETS_US` from the context's.
    pub fn factory(context: &ExporterContext) -> Result<Box<dyn Exporter>, ExportError> {
        let (config, buckets) = settings(context)?;
        let exporter = OtlpExporter::start(&context.agent_name, config, buckets)
            .map_err(|e| ExportError::failed(EXPORTER_NAME, e))?;
        Ok(Box::new(exporter))
    }

    /// The URL pushed to.
    pub fn endpoint_url(&self) -> &str {
        &self.endpoint
    }

    /// The model (for reading in process).
    pub fn model(&self) -> SharedModel {
        self.model.clone()
    }
}

impl Exporter for OtlpExporter {
    fn name(&self) -> &str {
        EXPORTER_NAME
    }

    fn export(&mut self, batch: &[Event]) -> Result<(), ExportError> {
        // Accepted under the model's lock, which the push thread holds while it
        // encodes: a 2xx for that state delivers exactly the events accepted before.
        let mut model = self.model.lock();
        model.ingest(&self.agent_name, batch);
        self.pusher.delivery().accept(batch);
        Ok(())
    }

    /// Delivered means: in a push the collector answered with a 2xx status.
    fn delivery(&self) -> Option<Arc<Delivery>> {
        Some(self.pusher.delivery().clone())
    }

    fn endpoint(&self) -> Option<String> {
        Some(self.endpoint.clone())
    }

    fn export_routes(
        &mut self,
        report: &telering_std::route::RouteReport,
    ) -> Result<(), ExportError> {
        // Cumulative totals: the next push carries the latest. The interval's slowest
        // transfers go out once, as spans, after it.
        self.pusher
            .spans()
            .offer(
                report
                    .slow
                    .iter()
                    .enumerate()
                    .map(|(position, (route, xfer))| crate::spans::PendingSpan {
                        agent: self.agent_name.clone(),
                        route: route.clone(),
                        xfer: *xfer,
                        position,
                    }),
            );
        self.model
            .lock()
            .set_routes(&self.agent_name, report.clone());
        Ok(())
    }

    fn flush(&mut self) -> Result<(), ExportError> {
        Ok(())
    }

    fn shutdown(&mut self) -> Result<(), ExportError> {
        self.pusher.shutdown();
        Ok(())
    }
}

/// The exporter's settings from `context`: `OTEL_*` from its environment or else the
/// process's, `NIXL_TELEMETRY_HISTOGRAM_BUCKETS_US` from its environment.
fn settings(context: &ExporterContext) -> Result<(OtlpConfig, Buckets), ExportError> {
    // `OTEL_*` given in the context's environment (tests, embedders) win over the
    // process's; telering-std's process snapshot keeps only its own variables.
    let config = OtlpConfig::from_lookup(|name| match context.env.get(name) {
        Ok(Some(value)) => Some(value),
        _ => std::env::var(name).ok(),
    })
    .map_err(|e| ExportError::Config {
        exporter: EXPORTER_NAME.into(),
        variable: e.variable.into(),
        value: e.value.clone(),
        message: e.message.clone(),
    })?;
    let buckets = match context.env.get_trimmed(ENV_BUCKETS) {
        Ok(None) => Buckets::default(),
        Ok(Some(text)) => Buckets::parse(&text).map_err(|e| ExportError::Config {
            exporter: EXPORTER_NAME.into(),
            variable: ENV_BUCKETS.into(),
            value: text.clone(),
            message: e.to_string(),
        })?,
        Err(e) => {
            return Err(ExportError::Config {
                exporter: EXPORTER_NAME.into(),
                variable: ENV_BUCKETS.into(),
                value: "(not UTF-8)".into(),
                message: e.to_string(),
            });
        }
    };
    Ok((config, buckets))
}
