//! The exporter list (`NIXL_TELEMETRY_EXPORTER`): rule 7 of [`crate::parse`] (each
//! name once, no empty entry), and a plug-in's library present before anything
//! starts.

use super::{ConfigError, Mode, TelemetryBuilder, blame_file};
use crate::config::vars::{self, is_plugin_name, plugin_library_path};
use std::path::Path;

impl TelemetryBuilder {
    /// The mode that exports to the exporter list `name` (trimmed): checked by rule 7
    /// of [`crate::parse`], each name registered, or a plug-in whose library is in
    /// `NIXL_PLUGIN_DIR`.
    pub(super) fn export_mode(&self, name: &str) -> Result<Mode, ConfigError> {
        // A list runs each exporter ([`crate::fanout`]); one name, that one.
        if name.is_empty() {
            let error = ConfigError::ExporterListEmpty {
                variable: self.exporter_variable.clone(),
                available: self.registry.names(),
            };
            return Err(self.blame_exporter_source(name, error));
        }
        let items = crate::parse::names(name).map_err(|e| self.exporter_list_error(name, e))?;
        let unknown = match items.is_empty() {
            true => Some(name),
            // With NIXL_PLUGIN_DIR set, another name is a plug-in, loaded
            // (or refused, naming its file) when the telemetry is built.
            false => match self.env.get_trimmed(vars::PLUGIN_DIR) {
                Ok(Some(dir)) => {
                    self.check_plugins_exist(name, &items, dir.as_ref())?;
                    None
                }
                _ => items.iter().copied().find(|i| !self.registry.contains(i)),
            },
        };
        if let Some(unknown) = unknown {
            let error = ConfigError::UnknownExporter {
                name: unknown.to_string(),
                available: self.registry.names(),
                variable: self.exporter_variable.clone(),
            };
            return Err(self.blame_exporter_source(name, error));
        }
        Ok(Mode::Export {
            exporter: items.join(",").to_ascii_lowercase(),
        })
    }

    /// `error` about the exporter list `list`, naming the configuration file and key
    /// when the list is the file's, unless the program chose another since.
    pub(super) fn blame_exporter_source(&self, list: &str, error: ConfigError) -> ConfigError {
        let variable = self.exporter_variable.as_str();
        if variable != vars::EXPORTER {
            // Another variable's (`TELERING_EXPORTERS`) or a flag's.
            return match self.env.get_trimmed(variable).ok().flatten().as_deref() == Some(list) {
                true => blame_file(&self.env, variable, error),
                false => error,
            };
        }
        let from_env = self.env.get_trimmed(vars::EXPORTER).ok().flatten();
        match from_env.as_deref() == Some(list) {
            true => blame_file(&self.env, vars::EXPORTER, error),
            false => error,
        }
    }

    /// Refuses a name in `items` (of the list `list`) that is no registered exporter
    /// and whose plug-in library is not in `dir`, before anything starts. A name that
    /// cannot name a library, or a library that exists, is left to the loader, which
    /// says what is wrong with it ([`crate::plugin`]).
    pub(super) fn check_plugins_exist(
        &self,
        list: &str,
        items: &[&str],
        dir: &Path,
    ) -> Result<(), ConfigError> {
        for name in items.iter().filter(|n| !self.registry.contains(n)) {
            if !is_plugin_name(name) {
                continue;
            }
            let path = plugin_library_path(dir, name);
            match std::fs::metadata(&path) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    let error = ConfigError::NoSuchPlugin {
                        variable: self.exporter_variable.as_str().into(),
                        name: name.to_string(),
                        available: self.registry.names(),
                        dir: dir.to_path_buf(),
                        reason: e.to_string(),
                    };
                    return Err(self.blame_exporter_source(list, error));
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// The configuration's error for the exporter list `list` that rule 7 of
    /// [`crate::parse`] refuses.
    pub(super) fn exporter_list_error(
        &self,
        list: &str,
        error: crate::parse::NameListError,
    ) -> ConfigError {
        use crate::parse::NameListError;
        let error = match error {
            NameListError::EmptyItem { position } => ConfigError::ExporterListEmptyEntry {
                list: list.to_string(),
                position,
                variable: self.exporter_variable.clone(),
            },
            NameListError::Repeated { name, first, again } => ConfigError::ExporterListedTwice {
                name,
                list: list.to_string(),
                entries: (first, again),
                variable: self.exporter_variable.clone(),
            },
        };
        self.blame_exporter_source(list, error)
    }
}
