//! A short run of every fuzz target, part of the test suite: the seeds
//! (real captures, samples and fixtures) and then a second of mutants each must
//! give no panic and no run over five seconds. The long run is
//! `cargo run --release -p zerohop-fuzz -- --runs 1000000`.
//!
//! Most seeds are real captures in `../shared`. As in every other test,
//! only a clone without any `../shared` (a user's) runs without them: the
//! targets with seeds in the repository run on those, the others say that
//! they are skipped. In CI (`CI` set), or with a `../shared` that lacks its
//! corpus, a missing capture fails the test instead.

use std::time::Duration;

use zerohop_fuzz::engine::{self, Config};
use zerohop_fuzz::seeds::Sources;

/// Whether the tests run in CI, which must never pass without `../shared`:
/// `CI` set to anything but empty, `0` or `false` (as CI services set it).
fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|value| !matches!(value.as_str(), "" | "0" | "false"))
}

/// The seed sources, having failed the test where `../shared` must be
/// there and is not.
fn sources() -> Sources {
    let sources = Sources::of_this_checkout();
    if sources.shared.is_none() {
        let shared = Sources::shared_of_this_checkout();
        assert!(
            !shared.exists(),
            "{} is beside the repository but lacks its corpus: the seeds must not be skipped",
            shared.display()
        );
        assert!(
            !in_ci(),
            "{} is absent: CI must not pass without the shared corpus",
            shared.display()
        );
    }
    sources
}

fn short_run(name: &str) {
    let target = zerohop_fuzz::targets::target(name).expect("a target of that name");
    let sources = sources();
    let seeds = (target.seeds)(&sources);
    if seeds.is_empty() && sources.shared.is_none() {
        eprintln!(
            "skipped: {name} has its seeds in {}, which is absent",
            Sources::shared_of_this_checkout().display()
        );
        return;
    }
    assert!(!seeds.is_empty(), "{name}: no seeds found");
    let largest = seeds.iter().map(Vec::len).max().unwrap_or(0);
    let config = Config {
        runs: u64::MAX,
        duration: Some(Duration::from_secs(1)),
        seed: 0x5eed,
        max_len: (largest * 2).clamp(4096, 256 << 10),
        failures: None,
    };
    let outcome = engine::run(target, seeds, &config);
    let failures: Vec<String> = outcome
        .panics
        .iter()
        .chain(&outcome.slow)
        .map(|f| format!("{}: {}", f.what, engine::escaped(&f.input, 300)))
        .collect();
    assert!(failures.is_empty(), "{name}: {failures:#?}");
    assert!(
        outcome.executions > outcome.seeds as u64,
        "{name}: no mutant ran"
    );
}

macro_rules! short_runs {
    ($($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                short_run(stringify!($name));
            }
        )*

        #[test]
        fn every_target_has_a_short_run() {
            let tested = [$(stringify!($name)),*];
            for target in zerohop_fuzz::TARGETS {
                assert!(tested.contains(&target.name), "no short run for {}", target.name);
            }
        }
    };
}

short_runs!(
    yaml,
    yaml_subset,
    schema,
    lint,
    intent,
    cufile,
    cmdline,
    cpuset,
    meminfo,
    modules,
    kmsg,
    mountinfo,
    mountstats,
    netaddr,
    nvidia,
    rdma,
    selected,
    validate,
    snapshot,
    diff,
    doctor,
    http,
);
