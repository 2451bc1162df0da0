//! `zerohop bench`: measure the storage → host memory → GPU data path.
//!
//! Argument parsing and output only; the engine is `zerohop-io`.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::anyhow;
use indicatif::{ProgressBar, ProgressStyle};
use zerohop_core::Document;
use zerohop_core::exit::ExitCode;
use zerohop_core::render::printable::printable;
use zerohop_io::buffers::HugePages;
use zerohop_io::prepare::Replace;
use zerohop_io::units::{parse_duration, parse_size};
use zerohop_io::{
    AccessPattern, Amount, CachePolicy, Control, EngineKind, NumaPolicy, ReadConfig, RunError,
    RunStatus, SinkKind,
};

use crate::error::CliError;
use crate::output::{self, Format};

/// Subcommands of `zerohop bench`.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum Args {
    /// Read files or block devices and report throughput, latency and CPU cost.
    Read(ReadArgs),
    /// Write a file with the pattern that `bench read --verify` checks.
    Prepare(PrepareArgs),
    /// Read the same data path by path: buffered, O_DIRECT + io_uring, + GPU copy, + GPUDirect Storage.
    Compare(CompareArgs),
}

/// Options shared by `read` and `compare`.
#[derive(Debug, clap::Args)]
pub(crate) struct RunArgs {
    /// Files or block devices to read (one shared file, or one per worker).
    #[arg(required = true, value_name = "PATH")]
    paths: Vec<PathBuf>,
    /// Bytes per read (K, M, G suffixes are binary).
    #[arg(long, default_value = "1M", value_parser = parse_size)]
    bs: u64,
    /// Reads in flight per worker.
    #[arg(long, default_value_t = 32)]
    qd: u32,
    /// Worker threads, each with its own ring or thread pool.
    #[arg(long, default_value_t = 1)]
    workers: u32,
    /// Total bytes to read, wrapping around the files [default: each file once].
    #[arg(long, value_parser = parse_size, conflicts_with = "time")]
    size: Option<u64>,
    /// Run for this long after the ramp, e.g. 10s or 2m.
    #[arg(long, value_parser = parse_duration)]
    time: Option<Duration>,
    /// Warm-up time before measuring.
    #[arg(long, default_value = "0", value_parser = parse_duration)]
    ramp: Duration,
    /// Sequential or random blocks.
    #[arg(long, value_enum, default_value_t = PatternArg::Seq)]
    pattern: PatternArg,
    /// Check every block against the pattern written by `bench prepare`.
    #[arg(long)]
    verify: bool,
    /// Output format.
    #[arg(long, value_name = "FORMAT", default_value = "human", value_parser = output::formats(output::HUMAN_OR_JSON))]
    format: Format,
    /// Hugetlb pages for the buffers when reserved.
    #[arg(long, value_enum, default_value_t = HugeArg::Auto)]
    hugepages: HugeArg,
    /// Place buffers on a NUMA node: off, device (the storage device's node) or a node number.
    #[arg(long, default_value = "off", value_parser = parse_numa)]
    numa: NumaPolicy,
    /// Drop the files' clean cached pages before a buffered run, or keep them.
    #[arg(long, value_enum, default_value_t = CacheArg::Drop)]
    cache: CacheArg,
}

/// Arguments of `zerohop bench read`.
#[derive(Debug, clap::Args)]
pub(crate) struct ReadArgs {
    #[command(flatten)]
    run: RunArgs,
    /// I/O backend.
    #[arg(long, value_enum, default_value_t = EngineArg::Uring)]
    engine: EngineArg,
    /// Bypass the page cache (O_DIRECT).
    #[arg(long)]
    direct: bool,
    /// Where the data goes: host memory, a GPU through pinned buffers, or a GPU through cuFile.
    #[arg(long, value_enum, default_value_t = SinkArg::Host)]
    sink: SinkArg,
    /// GPU number for the gpu and cufile sinks.
    #[arg(long, default_value_t = 0)]
    gpu: u32,
    /// Reads queued before each io_uring submission: 1 submits each read at once, the queue depth a whole refill.
    #[arg(long, default_value_t = 1)]
    submit_batch: u32,
    /// Ask io_uring for a kernel submission thread (IORING_SETUP_SQPOLL).
    #[arg(long)]
    sqpoll: bool,
    /// Ask io_uring for polled completions (IORING_SETUP_IOPOLL; needs --direct, and poll queues on the device).
    #[arg(long)]
    iopoll: bool,
    /// Do not register the buffers with io_uring.
    #[arg(long)]
    no_fixed_buffers: bool,
    /// Do not register the files with io_uring.
    #[arg(long)]
    no_registered_files: bool,
}

/// Arguments of `zerohop bench prepare`.
#[derive(Debug, clap::Args)]
pub(crate) struct PrepareArgs {
    /// The file to write: created, or replaced if a previous prepare wrote it.
    path: PathBuf,
    /// Its size, e.g. 4G.
    #[arg(long, value_parser = parse_size)]
    size: u64,
    /// Replace an existing regular file that a previous prepare did not write (links and special files are refused all the same).
    #[arg(long)]
    force: bool,
    /// Output format.
    #[arg(long, value_name = "FORMAT", default_value = "human", value_parser = output::formats(output::HUMAN_OR_JSON))]
    format: Format,
}

/// Arguments of `zerohop bench compare`.
#[derive(Debug, clap::Args)]
pub(crate) struct CompareArgs {
    #[command(flatten)]
    run: RunArgs,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum PatternArg {
    Seq,
    Rand,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum EngineArg {
    Uring,
    Pread,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum SinkArg {
    Host,
    Gpu,
    Cufile,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum HugeArg {
    Auto,
    Off,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum CacheArg {
    Drop,
    Keep,
}

fn parse_numa(text: &str) -> Result<NumaPolicy, String> {
    match text {
        "off" => Ok(NumaPolicy::Off),
        "device" => Ok(NumaPolicy::Device),
        n => n
            .parse()
            .map(NumaPolicy::Node)
            .map_err(|_| format!("`{n}` is not off, device or a node number")),
    }
}

impl RunArgs {
    fn config(&self) -> ReadConfig {
        ReadConfig {
            block_size: self.bs,
            queue_depth: self.qd,
            workers: self.workers,
            amount: match (self.size, self.time) {
                (Some(bytes), _) => Amount::Bytes(bytes),
                (None, Some(time)) => Amount::Time(time),
                (None, None) => Amount::OnePass,
            },
            ramp: self.ramp,
            pattern: match self.pattern {
                PatternArg::Seq => AccessPattern::Seq,
                PatternArg::Rand => AccessPattern::Rand,
            },
            verify: self.verify,
            hugepages: match self.hugepages {
                HugeArg::Auto => HugePages::Auto,
                HugeArg::Off => HugePages::Off,
            },
            numa: self.numa,
            cache: match self.cache {
                CacheArg::Drop => CachePolicy::Drop,
                CacheArg::Keep => CachePolicy::Keep,
            },
            ..ReadConfig::new(self.paths.clone())
        }
    }
}

/// Runs `zerohop bench`.
pub(crate) fn run(args: Args) -> Result<i32, CliError> {
    match args {
        Args::Read(args) => read(args),
        Args::Prepare(args) => prepare(args),
        Args::Compare(args) => compare(args),
    }
}

/// Exit code 2 for what the input or the machine caused (a missing file,
/// permission denied, a full disk, a failed read), 3 for a bug. The message
/// is the error's own sentence, with the kernel's error once, and escaped:
/// it quotes paths, which may hold terminal controls.
fn cli_error(err: RunError) -> CliError {
    let message = printable(&err.to_string()).into_owned();
    if err.is_bug() {
        CliError::Internal(anyhow::Error::msg(message))
    } else {
        CliError::usage(message)
    }
}

/// Writes human output with every line passed through [`printable`]:
/// paths and the kernel's or a library's reasons are quoted as they are.
fn print_human(render: impl FnOnce(&mut dyn Write) -> std::io::Result<()>) -> Result<(), CliError> {
    let mut text = Vec::new();
    render(&mut text).map_err(|e| CliError::Internal(anyhow!(e)))?;
    let text = String::from_utf8_lossy(&text);
    print(|w| {
        for line in text.split_inclusive('\n') {
            writeln!(w, "{}", printable(line.strip_suffix('\n').unwrap_or(line)))?;
        }
        Ok(())
    })
}

/// Writes to standard output; a full disk or a closed descriptor there is
/// the environment's doing (exit 2), said in one sentence.
fn print(write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>) -> Result<(), CliError> {
    crate::output::to_stdout(write)
        .map_err(|e| CliError::usage(format!("cannot write to standard output: {e}")))
}

/// A control whose stop flag is raised by the first Ctrl-C; a second one
/// ends the process at once.
fn interruptible() -> Result<Control, CliError> {
    let control = Control::default();
    crate::interrupt::stop_on_signal(&control.stop)?;
    Ok(control)
}

/// Runs `work` on a thread while drawing a progress bar on standard error
/// when it is a terminal and the output is for people.
fn with_progress<T: Send>(
    control: &Control,
    format: Format,
    total: Option<u64>,
    work: impl FnOnce() -> T + Send,
) -> T {
    let show = format == Format::Human && std::io::stderr().is_terminal();
    if !show {
        return work();
    }
    std::thread::scope(|scope| {
        let handle = scope.spawn(work);
        let bar = match total {
            Some(total) => ProgressBar::new(total).with_style(
                ProgressStyle::with_template(
                    "{bar:40} {bytes}/{total_bytes} {binary_bytes_per_sec} eta {eta}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
            ),
            None => ProgressBar::new_spinner().with_style(
                ProgressStyle::with_template(
                    "{spinner} {bytes} read, {binary_bytes_per_sec}, {elapsed}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            ),
        };
        while !handle.is_finished() {
            bar.set_position(control.progress.load(Ordering::Relaxed));
            std::thread::sleep(Duration::from_millis(100));
        }
        bar.finish_and_clear();
        handle
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

fn planned_bytes(cfg: &ReadConfig) -> Option<u64> {
    match cfg.amount {
        Amount::Bytes(bytes) => Some(bytes),
        Amount::Time(_) => None,
        Amount::OnePass => {
            let total: u64 = cfg
                .paths
                .iter()
                .filter_map(|p| std::fs::metadata(p).ok())
                .map(|m| m.len())
                .sum();
            let rand = cfg.pattern == AccessPattern::Rand;
            (total > 0 && !rand).then_some(total)
        }
    }
}

fn write_json(value: &impl serde::Serialize) -> Result<(), CliError> {
    let text = serde_json::to_string_pretty(&Document::new("bench", value))
        .map_err(|e| CliError::Internal(anyhow!(e)))?;
    print(|w| writeln!(w, "{text}"))
}

fn read(args: ReadArgs) -> Result<i32, CliError> {
    let format = args.run.format;
    let cfg = ReadConfig {
        engine: match args.engine {
            EngineArg::Uring => EngineKind::Uring,
            EngineArg::Pread => EngineKind::Pread,
        },
        direct: args.direct,
        sink: match args.sink {
            SinkArg::Host => SinkKind::Host,
            SinkArg::Gpu => SinkKind::Gpu,
            SinkArg::Cufile => SinkKind::Cufile,
        },
        gpu: args.gpu,
        submit_batch: args.submit_batch,
        sqpoll: args.sqpoll,
        iopoll: args.iopoll,
        fixed_buffers: !args.no_fixed_buffers,
        registered_files: !args.no_registered_files,
        ..args.run.config()
    };
    if cfg.sink == SinkKind::Cufile {
        // Before any thread of the run starts: it sets an environment variable.
        zerohop_io::gpu::cufile::log_outside_working_dir();
    }
    let control = interruptible()?;
    let report = with_progress(&control, format, planned_bytes(&cfg), || {
        zerohop_io::run_read(&cfg, &control)
    })
    .map_err(cli_error)?;
    match format {
        Format::Json => {
            write_json(&report)?;
            // The summary says it on standard output; a JSON reader's
            // person sees it here.
            if report.status == RunStatus::Skipped
                && let Some(reason) = &report.skip_reason
            {
                eprintln!("warning: {} sink skipped: {}", cfg.sink, printable(reason));
            }
        }
        // Human, the only other value `--format` parses here.
        _ => print_human(|w| report.write_human(w))?,
    }
    Ok(if report.verify_failed() {
        ExitCode::FAILED
    } else if report.status == RunStatus::Interrupted {
        crate::interrupt::exit_code()
    } else {
        ExitCode::OK
    })
}

fn prepare(args: PrepareArgs) -> Result<i32, CliError> {
    let control = interruptible()?;
    let replace = if args.force {
        Replace::AnyRegularFile
    } else {
        Replace::BenchFileOnly
    };
    let report = with_progress(&control, args.format, Some(args.size), || {
        zerohop_io::prepare::prepare(&args.path, args.size, replace, &control)
    })
    .map_err(cli_error)?;
    match args.format {
        Format::Json => write_json(&report)?,
        // Human, the only other value `--format` parses here.
        _ => print_human(|w| {
            if !report.complete {
                return writeln!(
                    w,
                    "interrupted after {}: nothing was written to {}",
                    zerohop_io::units::format_bytes(report.bytes as f64),
                    report.path.display()
                );
            }
            writeln!(
                w,
                "wrote {} to {} in {:.2} s ({}/s){}",
                zerohop_io::units::format_bytes(report.bytes as f64),
                report.path.display(),
                report.elapsed_s,
                zerohop_io::units::format_bytes(report.bw_bytes_per_s),
                if report.replaced {
                    ", replacing the previous file"
                } else {
                    ""
                }
            )
        })?,
    }
    Ok(if report.complete {
        ExitCode::OK
    } else {
        crate::interrupt::exit_code()
    })
}

fn compare(args: CompareArgs) -> Result<i32, CliError> {
    let format = args.run.format;
    let cfg = args.run.config();
    // Its last path is cuFile's; set before any thread of the run starts.
    zerohop_io::gpu::cufile::log_outside_working_dir();
    let control = interruptible()?;
    let report = with_progress(&control, format, None, || {
        zerohop_io::compare::compare(&cfg, &control)
    })
    .map_err(cli_error)?;
    match format {
        Format::Json => write_json(&report)?,
        // Human, the only other value `--format` parses here.
        _ => print_human(|w| report.write_human(w))?,
    }
    Ok(if report.verify_failed() {
        ExitCode::FAILED
    } else if control.stop.load(Ordering::Relaxed) {
        crate::interrupt::exit_code()
    } else {
        ExitCode::OK
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(subcommand)]
        bench: Args,
    }

    #[test]
    fn the_documented_command_line_parses() {
        let cli = Cli::try_parse_from([
            "bench",
            "read",
            "a",
            "b",
            "--engine",
            "pread",
            "--direct",
            "--bs",
            "4K",
            "--qd",
            "64",
            "--workers",
            "2",
            "--time",
            "10",
            "--pattern",
            "rand",
            "--sink",
            "gpu",
            "--verify",
            "--format",
            "json",
        ])
        .unwrap();
        let Args::Read(args) = cli.bench else {
            panic!("not read")
        };
        assert_eq!(args.run.bs, 4096);
        assert_eq!(args.run.paths.len(), 2);
        assert_eq!(args.run.time, Some(Duration::from_secs(10)));
        assert!(
            Cli::try_parse_from(["bench", "read", "a", "--size", "1G", "--time", "5"]).is_err()
        );
        assert!(Cli::try_parse_from(["bench", "read", "a", "--bs", "1Q"]).is_err());
        assert!(Cli::try_parse_from(["bench", "prepare", "f", "--size", "4G"]).is_ok());
        assert!(Cli::try_parse_from(["bench", "compare", "f", "--numa", "device"]).is_ok());
        assert!(Cli::try_parse_from(["bench", "compare", "f", "--numa", "near"]).is_err());
    }
}
