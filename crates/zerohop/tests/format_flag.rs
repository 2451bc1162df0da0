//! One `--format` on every command: the same values mean the same output
//! everywhere, and a command refuses a format it does not write, naming the
//! ones it does, before it reads anything.

use std::process::{Command, Output};

fn zerohop(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_zerohop"))
        .args(args)
        .output()
        .expect("zerohop runs")
}

/// Each command with the formats it writes; every other value of the one
/// list is refused.
const COMMANDS: &[(&[&str], &[&str])] = &[
    (&["doctor"], &["human", "json", "npd", "html"]),
    (&["lint", "-"], &["human", "json", "sarif"]),
    (&["topo"], &["human", "json", "svg", "html"]),
    (&["diff", "/", "/"], &["human", "json"]),
    (&["validate", "parse", "."], &["human", "json"]),
    (&["bench", "read", "/nonexistent"], &["human", "json"]),
    (&["fleet"], &["human", "json", "html"]),
    (&["checks"], &["human", "json"]),
];

const EVERY_FORMAT: [&str; 6] = ["human", "json", "sarif", "npd", "svg", "html"];

#[test]
fn a_format_a_command_does_not_write_is_a_usage_error_naming_the_ones_it_does() {
    for (command, writes) in COMMANDS {
        for format in EVERY_FORMAT.iter().filter(|f| !writes.contains(f)) {
            let mut args = command.to_vec();
            args.extend(["--format", format]);
            let out = zerohop(&args);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
            let offered = writes.join(", ");
            assert!(
                stderr.contains(&format!("[possible values: {offered}]")),
                "{args:?}: {stderr}"
            );
        }
    }
}

#[test]
fn json_is_the_same_versioned_document_envelope_on_every_command_that_reads_no_cluster() {
    // `topo` and `doctor` on this machine's root, read-only and offline.
    for command in [["topo", "--format", "json"], ["doctor", "--format", "json"]] {
        let out = zerohop(&command);
        let document: serde_json::Value =
            serde_json::from_slice(&out.stdout).unwrap_or_else(|err| panic!("{command:?}: {err}"));
        assert_eq!(document["schema_version"], 1, "{command:?}");
        assert_eq!(document["command"], command[0], "{command:?}");
        assert!(document["zerohop_version"].is_string(), "{command:?}");
    }
}
