//! The variables' names, defaults and limits, and the [`EnvSource`] they are read
//! from, under their former path: they live in [`crate::config`] (`config::vars`,
//! `config::env`).

pub use crate::config::vars;
pub use crate::config::vars::{
    DEFAULT_BUFFER_SIZE, DEFAULT_RUN_INTERVAL, MAX_BUFFER_SIZE, MAX_RUN_INTERVAL,
};
pub use crate::config::{EnvError, EnvSource};
