//! The `telering` command. See the `telering_cli` library for what each subcommand
//! does; this file only parses the command line and maps the outcome to an exit code:
//! 0 success, 1 runtime error, 2 usage or configuration error.

#![deny(missing_docs, missing_debug_implementations, unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]

use clap::Parser;
use telering_cli::{Cli, EXIT_OK, init_logger, install_interrupt_handler, run};

fn main() {
    // Usage errors exit with 2 here, `--help` and `--version` with 0.
    let cli = Cli::parse();
    init_logger();
    install_interrupt_handler();
    let code = match run(cli) {
        Ok(()) => EXIT_OK,
        // The reader of our output went away (`telering tail f | head`): not an error.
        // `read`, which takes events, reports it as `CliError::OutputClosed` instead.
        Err(e) if e.is_broken_pipe() => EXIT_OK,
        Err(e) => {
            eprintln!("telering: {e}");
            e.exit_code()
        }
    };
    std::process::exit(code);
}
