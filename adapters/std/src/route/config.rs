//! The route settings of [`TelemetryBuilder`]: the bound and the slow transfers kept.

use super::{MAX_ROUTES, MAX_SLOW_XFERS};
use crate::ConfigError;
use crate::TelemetryBuilder;
use crate::config::vars;

impl TelemetryBuilder {
    /// `TELERING_ROUTES_MAX`: how many routes the agent keeps of its own (default
    /// 64); later routes fold into `other` ([`crate::route`]). Values are clamped to
    /// 1 ..= [`MAX_ROUTES`]; the variable refuses others.
    ///
    /// ```
    /// use telering_std::{EnvSource, TelemetryBuilder};
    /// assert_eq!(TelemetryBuilder::new("a").resolve().unwrap().routes.max, 64);
    /// assert_eq!(TelemetryBuilder::new("a").routes_max(8).resolve().unwrap().routes.max, 8);
    /// let env = EnvSource::from_pairs([("TELERING_ROUTES_MAX", "512")]);
    /// let e = TelemetryBuilder::from_env("a", &env).unwrap_err();
    /// assert_eq!(e.to_string(), "TELERING_ROUTES_MAX=512 is not a number from 1 to 511; use one in that range");
    /// ```
    pub fn routes_max(mut self, max: u16) -> Self {
        self.routes.max = max.clamp(1, MAX_ROUTES);
        self
    }

    /// `TELERING_SLOW_XFERS`: how many of each route's slowest transfers each flush
    /// interval keeps whole (default 8; 0 keeps none). Clamped to
    /// [`MAX_SLOW_XFERS`]; the variable refuses larger values.
    ///
    /// ```
    /// use telering_std::{EnvSource, TelemetryBuilder};
    /// let env = EnvSource::from_pairs([("TELERING_SLOW_XFERS", "3")]);
    /// let b = TelemetryBuilder::from_env("a", &env).unwrap();
    /// assert_eq!(b.resolve().unwrap().routes.slow_kept, 3);
    /// assert_eq!(TelemetryBuilder::new("a").slow_xfers_kept(0).resolve().unwrap().routes.slow_kept, 0);
    /// ```
    pub fn slow_xfers_kept(mut self, k: u16) -> Self {
        self.routes.slow_kept = k.min(MAX_SLOW_XFERS);
        self
    }

    /// Applies `TELERING_ROUTES_MAX` or `TELERING_SLOW_XFERS` (trimmed, not blank).
    pub(crate) fn apply_route_var(self, name: &str, v: String) -> Result<Self, ConfigError> {
        let (variable, min, max) = if name == vars::ROUTES_MAX {
            (vars::ROUTES_MAX, 1, MAX_ROUTES)
        } else {
            (vars::SLOW_XFERS, 0, MAX_SLOW_XFERS)
        };
        let n = match crate::parse::unsigned(&v) {
            Ok(n) if (u64::from(min)..=u64::from(max)).contains(&n) => n as u16,
            _ => {
                return Err(ConfigError::RouteLimit {
                    variable,
                    value: v,
                    min,
                    max,
                });
            }
        };
        Ok(if variable == vars::ROUTES_MAX {
            self.routes_max(n)
        } else {
            self.slow_xfers_kept(n)
        })
    }
}
