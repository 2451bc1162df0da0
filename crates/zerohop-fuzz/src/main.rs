//! `zerohop-fuzz`: runs the fuzz targets and prints one line of figures
//! per target. Exit 0 when no input panicked or ran slow, 1 otherwise.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use zerohop_fuzz::engine::{self, Config, SLOW};
use zerohop_fuzz::seeds::{MAX_SEED_BYTES, Sources};
use zerohop_fuzz::{TARGETS, Target};

/// Mutation fuzzing of zerohop's parsers and doctor, on stable Rust.
#[derive(Debug, Parser)]
#[command(name = "zerohop-fuzz", version, about)]
struct Args {
    /// Targets to run (all when none is named).
    targets: Vec<String>,
    /// Executions per target.
    #[arg(long, default_value_t = 100_000)]
    runs: u64,
    /// Stop mutating each target after this many seconds (counted once its
    /// seeds have run), whatever the count.
    #[arg(long)]
    seconds: Option<u64>,
    /// Random seed: the same seed tries the same inputs.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Where failing inputs are written.
    #[arg(long, default_value = "fuzz-failures")]
    failures: PathBuf,
    /// Run one saved input through the named target and report what happens.
    #[arg(long, value_name = "FILE")]
    replay: Option<PathBuf>,
    /// List the targets and what each covers.
    #[arg(long)]
    list: bool,
}

fn main() -> ExitCode {
    let args = Args::parse();
    if args.list {
        for target in TARGETS {
            println!("{:<11} {}", target.name, target.covers);
        }
        return ExitCode::SUCCESS;
    }
    let chosen: Vec<&'static Target> = if args.targets.is_empty() {
        TARGETS.iter().collect()
    } else {
        let mut chosen = Vec::new();
        for name in &args.targets {
            match zerohop_fuzz::targets::target(name) {
                Some(target) => chosen.push(target),
                None => {
                    eprintln!("error: no target `{name}`; `zerohop-fuzz --list` names them");
                    return ExitCode::from(2);
                }
            }
        }
        chosen
    };
    if let Some(file) = &args.replay {
        return replay(&chosen, file);
    }
    let sources = Sources::of_this_checkout();
    if sources.shared.is_none() {
        eprintln!("note: ../shared is absent: seeds come from the repository only");
    }
    println!(
        "{:<11} {:>11} {:>9} {:>6} {:>10} {:>9} {:>6} {:>5}",
        "target", "executions", "exec/s", "seeds", "outcomes", "slowest", "panics", "slow"
    );
    let mut clean = true;
    for target in chosen {
        let seeds = (target.seeds)(&sources);
        let largest = seeds.iter().map(Vec::len).max().unwrap_or(0);
        let config = Config {
            runs: args.runs,
            duration: args.seconds.map(Duration::from_secs),
            seed: args.seed,
            max_len: (largest * 2).clamp(4096, 2 * MAX_SEED_BYTES),
            failures: Some(args.failures.clone()),
        };
        let outcome = engine::run(target, seeds, &config);
        println!(
            "{:<11} {:>11} {:>9.0} {:>6} {:>10} {:>8.1}ms {:>6} {:>5}",
            outcome.target,
            outcome.executions,
            outcome.executions as f64 / outcome.elapsed.as_secs_f64().max(1e-9),
            outcome.seeds,
            outcome.signatures,
            outcome.slowest.as_secs_f64() * 1e3,
            outcome.panics.len(),
            outcome.slow.len(),
        );
        for failure in outcome.panics.iter().chain(&outcome.slow) {
            eprintln!(
                "  {}: {}",
                failure.what,
                engine::escaped(&failure.input, 200)
            );
        }
        clean &= outcome.clean();
    }
    if clean {
        ExitCode::SUCCESS
    } else {
        eprintln!(
            "failing inputs were written to {} (panics, or runs over {} s)",
            args.failures.display(),
            SLOW.as_secs()
        );
        ExitCode::FAILURE
    }
}

fn replay(targets: &[&'static Target], file: &PathBuf) -> ExitCode {
    let Ok(input) = std::fs::read(file) else {
        eprintln!("error: cannot read {}", file.display());
        return ExitCode::from(2);
    };
    let [target] = targets else {
        eprintln!("error: --replay needs exactly one target");
        return ExitCode::from(2);
    };
    let started = std::time::Instant::now();
    let signature = (target.run)(&input);
    println!(
        "{}: finished in {:.1} ms, outcome {signature:016x}",
        target.name,
        started.elapsed().as_secs_f64() * 1e3
    );
    ExitCode::SUCCESS
}
