//! A short run of every fuzz target, part of the test suite: the seeds
//! (real captures, samples and fixtures) and then a second of mutants each must
//! give no panic and no run over five seconds. The long run is
//! `cargo run --release -p zerohop-fuzz -- --runs 1000000`.

use std::time::Duration;

use zerohop_fuzz::engine::{self, Config};
use zerohop_fuzz::seeds::Sources;

fn short_run(name: &str) {
    let target = zerohop_fuzz::targets::target(name).expect("a target of that name");
    let sources = Sources::of_this_checkout();
    let seeds = (target.seeds)(&sources);
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
    yaml, schema, lint, intent, cufile, cmdline, cpuset, meminfo, modules, kmsg, mountinfo,
    mountstats, netaddr, nvidia, rdma, selected, validate, snapshot, diff, doctor,
);
