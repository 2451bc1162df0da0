//! `zerohop`: plans, verifies and measures the zero-copy data path of GPU
//! clusters, from storage through the RDMA NIC into GPU memory.
//!
//! This crate only parses arguments and wires the library crates together.

mod commands;
mod error;
mod interrupt;
mod output;

use std::process;

use clap::Parser;
use zerohop_core::exit::ExitCode;

use crate::commands::Command;

/// Plans, verifies and measures the zero-copy storage → RDMA NIC → GPU data path.
#[derive(Debug, Parser)]
#[command(name = "zerohop", version, about, max_term_width = 100)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

fn main() {
    // Before anything else: started as a reader of host files, this
    // process only serves reads (see `zerohop_host::reader`).
    zerohop_host::reader::serve_or_enable();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => {
            // Help and version requests are not errors; clap knows which is which.
            let code = if err.use_stderr() {
                ExitCode::USAGE
            } else {
                ExitCode::OK
            };
            let _ = err.print();
            process::exit(code);
        }
    };
    // Before any command runs, so that a signal at any point exits with
    // 128 + its number (see `interrupt`).
    let code = match interrupt::install().and_then(|()| commands::run(cli.command)) {
        Ok(code) => code,
        Err(err) => {
            let (code, message) = err.exit();
            eprintln!("{message}");
            code
        }
    };
    process::exit(code);
}
