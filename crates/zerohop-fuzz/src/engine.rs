//! The mutation loop: pick an input from the pool, mutate it, run the
//! target, and record panics, slow runs and hangs.
//!
//! There is no coverage instrumentation on stable Rust without extra
//! tooling, so the loop is steered by outcomes instead: a mutant whose
//! signature (see [`Target::run`]) has not been seen joins the pool and is
//! mutated further. A hang cannot be interrupted in-process: a watchdog
//! thread writes the input that hangs to the failure directory and aborts
//! the process, so a hang is never silent.

use std::cell::RefCell;
use std::collections::HashSet;
use std::panic::{self, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Once};
use std::thread;
use std::time::{Duration, Instant};

use crate::mutate::mutate;
use crate::rng::Rng;
use crate::targets::Target;

/// How long one run may take before it counts as a failure.
pub const SLOW: Duration = Duration::from_secs(5);

/// How long one run may take before the process is aborted as hung.
pub const HANG: Duration = Duration::from_secs(60);

/// The most inputs kept in the pool besides the seeds.
const POOL: usize = 4096;

/// How to run a target.
#[derive(Debug, Clone)]
pub struct Config {
    /// Stop after this many executions.
    pub runs: u64,
    /// Stop mutating after this long, whatever the count. The clock starts
    /// once every seed has run, so that a loaded machine still tries
    /// mutants.
    pub duration: Option<Duration>,
    /// The random seed; the same seed gives the same inputs.
    pub seed: u64,
    /// The largest input tried.
    pub max_len: usize,
    /// Where failing inputs are written (none when `None`).
    pub failures: Option<PathBuf>,
}

/// A failing input and what went wrong.
#[derive(Debug, Clone)]
pub struct Failure {
    /// The input.
    pub input: Vec<u8>,
    /// The panic message, or the time taken.
    pub what: String,
}

/// The result of running one target.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The target's name.
    pub target: &'static str,
    /// Executions made (seeds included).
    pub executions: u64,
    /// Seeds it started from.
    pub seeds: usize,
    /// Wall-clock time of the whole run.
    pub elapsed: Duration,
    /// The longest single execution.
    pub slowest: Duration,
    /// Distinct outcome signatures seen.
    pub signatures: usize,
    /// Inputs that panicked.
    pub panics: Vec<Failure>,
    /// Inputs that took longer than [`SLOW`].
    pub slow: Vec<Failure>,
}

impl Outcome {
    /// Whether nothing panicked or ran slow.
    pub fn clean(&self) -> bool {
        self.panics.is_empty() && self.slow.is_empty()
    }
}

thread_local! {
    /// The message of the last panic on this thread while fuzzing.
    static CAUGHT: RefCell<Option<String>> = const { RefCell::new(None) };
    static FUZZING: RefCell<bool> = const { RefCell::new(false) };
}

/// Installs (once) a panic hook that records panics of fuzzing threads
/// instead of printing them, and leaves other panics to the usual hook.
fn quiet_panics() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let usual = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if FUZZING.with(|f| *f.borrow()) {
                let location = info
                    .location()
                    .map(|l| format!(" at {}:{}", l.file(), l.line()))
                    .unwrap_or_default();
                let message = info
                    .payload()
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| info.payload().downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "panic".to_owned());
                CAUGHT.with(|c| *c.borrow_mut() = Some(format!("{message}{location}")));
            } else {
                usual(info);
            }
        }));
    });
}

/// The input being run and when it started, for the watchdog.
type Current = Arc<Mutex<Option<(Instant, Vec<u8>)>>>;

fn start_watchdog(
    target: &'static str,
    current: Current,
    failures: Option<PathBuf>,
    done: Arc<AtomicBool>,
) {
    thread::spawn(move || {
        while !done.load(Ordering::Relaxed) {
            thread::sleep(Duration::from_millis(200));
            let hung = current
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .as_ref()
                .filter(|(start, _)| start.elapsed() > HANG)
                .map(|(_, input)| input.clone());
            if let Some(input) = hung {
                let saved = failures
                    .as_ref()
                    .and_then(|dir| save(dir, target, "hang", &input).ok())
                    .map_or_else(|| escaped(&input, 400), |path| path.display().to_string());
                eprintln!(
                    "zerohop-fuzz: {target}: an input ran over {} s; aborting: {saved}",
                    HANG.as_secs()
                );
                std::process::abort();
            }
        }
    });
}

/// Runs `target` from `seeds` under `config`.
pub fn run(target: &'static Target, seeds: Vec<Vec<u8>>, config: &Config) -> Outcome {
    quiet_panics();
    let current: Current = Arc::new(Mutex::new(None));
    let done = Arc::new(AtomicBool::new(false));
    start_watchdog(
        target.name,
        current.clone(),
        config.failures.clone(),
        done.clone(),
    );

    let started = Instant::now();
    let mut rng = Rng::new(config.seed);
    let mut outcome = Outcome {
        target: target.name,
        executions: 0,
        seeds: seeds.len(),
        elapsed: Duration::ZERO,
        slowest: Duration::ZERO,
        signatures: 0,
        panics: Vec::new(),
        slow: Vec::new(),
    };
    let mut seen = HashSet::new();
    let mut pool: Vec<Vec<u8>> = Vec::new();
    let base: Vec<Vec<u8>> = if seeds.is_empty() {
        vec![Vec::new()]
    } else {
        seeds
    };

    let execute = |input: Vec<u8>, outcome: &mut Outcome| -> Option<u64> {
        *current.lock().unwrap_or_else(|p| p.into_inner()) = Some((Instant::now(), input.clone()));
        FUZZING.with(|f| *f.borrow_mut() = true);
        let began = Instant::now();
        let result = panic::catch_unwind(AssertUnwindSafe(|| (target.run)(&input)));
        let took = began.elapsed();
        FUZZING.with(|f| *f.borrow_mut() = false);
        *current.lock().unwrap_or_else(|p| p.into_inner()) = None;
        outcome.executions += 1;
        outcome.slowest = outcome.slowest.max(took);
        if took > SLOW {
            outcome.slow.push(Failure {
                input: input.clone(),
                what: format!("took {:.1} s", took.as_secs_f64()),
            });
        }
        match result {
            Ok(signature) => Some(signature),
            Err(_) => {
                let what = CAUGHT.with(|c| c.borrow_mut().take()).unwrap_or_default();
                outcome.panics.push(Failure { input, what });
                None
            }
        }
    };

    // Every seed runs once, unmutated: real data must pass first.
    for seed in &base {
        if let Some(signature) = execute(seed.clone(), &mut outcome) {
            seen.insert(signature);
        }
    }
    let mutating = Instant::now();
    let out_of_time = |outcome: &Outcome| {
        outcome.executions >= config.runs
            || config
                .duration
                .is_some_and(|limit| mutating.elapsed() >= limit)
    };
    while !out_of_time(&outcome) {
        let from_pool = !pool.is_empty() && rng.one_in(2);
        let parent = if from_pool {
            rng.pick(&pool)
        } else {
            rng.pick(&base)
        };
        let mut input = parent.cloned().unwrap_or_default();
        let other = rng.pick(&base).cloned().unwrap_or_default();
        mutate(
            &mut input,
            &other,
            target.dictionary,
            config.max_len,
            &mut rng,
        );
        if let Some(signature) = execute(input.clone(), &mut outcome)
            && seen.insert(signature)
        {
            if pool.len() < POOL {
                pool.push(input);
            } else {
                let at = rng.below(POOL);
                pool[at] = input;
            }
        }
    }
    done.store(true, Ordering::Relaxed);
    outcome.signatures = seen.len();
    outcome.elapsed = started.elapsed();
    if let Some(dir) = &config.failures {
        for failure in outcome.panics.iter().chain(&outcome.slow) {
            let _ = save(dir, target.name, "failure", &failure.input);
        }
    }
    outcome
}

/// Writes a failing input as `<dir>/<target>-<kind>-<hash>.bin`.
fn save(dir: &std::path::Path, target: &str, kind: &str, input: &[u8]) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    let path = dir.join(format!(
        "{target}-{kind}-{:016x}.bin",
        crate::signature::signature(input)
    ));
    std::fs::write(&path, input)?;
    Ok(path)
}

/// The first `max` bytes of `input`, printable.
pub fn escaped(input: &[u8], max: usize) -> String {
    let shown: String = input
        .iter()
        .take(max)
        .flat_map(|b| std::ascii::escape_default(*b))
        .map(char::from)
        .collect();
    if input.len() > max {
        format!("{shown}… ({} bytes)", input.len())
    } else {
        shown
    }
}
