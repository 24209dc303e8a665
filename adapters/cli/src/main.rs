//! The `telering` command. See the `telering_cli` library for what each subcommand
//! does; this file only parses the command line and maps the outcome to an exit code:
//! 0 success, 1 runtime error, 2 usage or configuration error.

#![deny(missing_docs, missing_debug_implementations, unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]

use clap::Parser;
use telering_cli::{
    Cli, EXIT_OK, error_line, init_logger, install_interrupt_handler, run, usage_error,
};

fn main() {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // `--help` and `--version` print to stdout and exit with 0; a usage error is
        // one line on stderr and exits with 2.
        Err(e) => std::process::exit(usage_error(&e)),
    };
    init_logger();
    install_interrupt_handler();
    let code = match run(cli) {
        Ok(()) => EXIT_OK,
        // The reader of our output went away (`telering tail f | head`): not an error.
        // `read`, which takes events, reports it as `CliError::OutputClosed` instead.
        Err(e) if e.is_broken_pipe() => EXIT_OK,
        Err(e) => {
            error_line(&e.to_string());
            e.exit_code()
        }
    };
    std::process::exit(code);
}
