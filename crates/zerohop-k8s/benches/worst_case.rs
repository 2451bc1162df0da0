//! Loads and validates the worst input shapes at the 32 MiB input limit:
//! one mapping with millions of keys, one line of 32 MiB, thousands of flow
//! mappings on one line, millions of tiny documents, deep nesting, aliases
//! of a long scalar, and custom resources whose list-map, list-set,
//! `additionalProperties` and strict objects grow with the input.
//!
//! Run with `cargo bench -p zerohop-k8s --bench worst_case`; pass a shape's
//! name (`cargo bench -p zerohop-k8s --bench worst_case -- conditions`) to
//! run that shape alone, which makes the peak RSS printed that shape's own
//! (the input's 32 MiB included). Prints, per shape, the median of the
//! repeats for loading (YAML to spanned nodes), for the conversion to JSON,
//! and for validation (wall clock, then the thread's CPU time), and the
//! peak RSS after loading.

use std::fmt::Write as _;
use std::hint::black_box;
use std::time::{Duration, Instant};

use serde_json::Value;
use zerohop_k8s::schema::CrdCatalog;
use zerohop_k8s::yaml::{self, Limits, Node};

const REPEATS: usize = 3;

/// A CRD whose schema has every shape of collection that grows with its
/// input: a list-map, a list-set, a map of strings with a pattern, and a
/// strict object with enough declared fields to make suggestions work.
const CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: shapes.bench.zerohop.dev}
spec:
  group: bench.zerohop.dev
  names: {kind: Shape, plural: shapes}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          apiVersion: {type: string}
          kind: {type: string}
          metadata: {type: object}
          spec:
            type: object
            properties:
              conditions:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [type, reason]
                items:
                  type: object
                  required: [type, status]
                  properties:
                    type: {type: string, maxLength: 316}
                    status: {type: string, enum: ["True", "False", Unknown]}
                    reason: {type: string, pattern: '^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$'}
                    message: {type: string, maxLength: 32768}
                    lastTransitionTime: {type: string, format: date-time}
              tags: {type: array, x-kubernetes-list-type: set, items: {type: string}}
              labels: {type: object, additionalProperties: {type: string, pattern: '^[a-z0-9.-]*$'}}
              strict:
                type: object
                properties:
                  resourceName: {type: string}
                  deviceType: {type: string}
                  numVfs: {type: integer}
                  priority: {type: integer}
                  mtu: {type: integer}
                  isRdma: {type: boolean}
                  linkType: {type: string}
                  eSwitchMode: {type: string}
                  excludeTopology: {type: boolean}
                  needVhostNet: {type: boolean}
                  nodeSelector: {type: object, additionalProperties: {type: string}}
                  nicSelector: {type: object, x-kubernetes-preserve-unknown-fields: true}
                  bridge: {type: object, x-kubernetes-preserve-unknown-fields: true}
                  externallyManaged: {type: boolean}
                  vdpaType: {type: string}
"#;

/// Just under the 32 MiB limit, leaving room for the last item written.
const TARGET: usize = 32 * 1024 * 1024 - 4096;

struct Shape {
    name: &'static str,
    what: &'static str,
    /// Writes the input; called only for the shapes that run.
    text: fn() -> String,
}

fn fill(head: &str, mut item: impl FnMut(&mut String, usize), tail: &str) -> String {
    let mut text = String::with_capacity(TARGET + 4096);
    text.push_str(head);
    let mut index = 0;
    while text.len() + tail.len() < TARGET {
        item(&mut text, index);
        index += 1;
    }
    text.push_str(tail);
    text
}

const CR_HEAD: &str = "apiVersion: bench.zerohop.dev/v1\nkind: Shape\nmetadata: {name: worst, namespace: bench}\nspec:\n";

fn shapes() -> Vec<Shape> {
    vec![
        Shape {
            name: "keys",
            what: "a ConfigMap with one key per line",
            text: || {
                fill(
                    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: keys}\ndata:\n",
                    |t, i| {
                        let _ = writeln!(t, "  k{i}: v");
                    },
                    "",
                )
            },
        },
        Shape {
            name: "flow-keys",
            what: "one flow mapping on one line",
            text: || {
                fill(
                    "{",
                    |t, i| {
                        let _ = write!(t, "k{i}: 1, ");
                    },
                    "end: 1}\n",
                )
            },
        },
        Shape {
            name: "flow-maps",
            what: "a sequence of tiny flow mappings on one line",
            text: || fill("[", |t, _| t.push_str("{a: 1}, "), "{a: 1}]\n"),
        },
        Shape {
            name: "nested-flow",
            what: "a flow sequence as the only item of another",
            text: || fill("[[", |t, _| t.push_str("1, "), "1]]\n"),
        },
        Shape {
            name: "long-plain",
            what: "one plain scalar of 32 MiB on one line",
            text: || format!("data: {}\n", "x".repeat(TARGET - 8)),
        },
        Shape {
            name: "long-quoted",
            what: "one double-quoted scalar of 32 MiB with escapes",
            text: || format!("data: \"{}\"\n", "ab\\t\\e\\u00e9 ".repeat(TARGET / 14)),
        },
        Shape {
            name: "literal",
            what: "one literal block scalar of 32 MiB",
            text: || fill("data: |\n", |t, _| t.push_str("  line of text\n"), ""),
        },
        Shape {
            name: "sequence",
            what: "a block sequence of small integers",
            text: || fill("", |t, _| t.push_str("- 1\n"), ""),
        },
        Shape {
            name: "documents",
            what: "tiny documents in one stream",
            text: || fill("", |t, _| t.push_str("---\na: 1\n"), ""),
        },
        Shape {
            name: "deep",
            what: "nesting 120 levels deep, repeated",
            text: || {
                fill(
                    "[",
                    |t, _| {
                        t.push_str(&"[".repeat(120));
                        t.push_str(&"]".repeat(120));
                        t.push_str(", ");
                    },
                    "1]\n",
                )
            },
        },
        Shape {
            name: "alias-long",
            what: "a 1 MiB scalar aliased until refused",
            text: || {
                let mut text = format!("a: &a {}\nb: [", "x".repeat(1 << 20));
                while text.len() < TARGET {
                    text.push_str("*a, ");
                }
                text.push_str("*a]\n");
                text
            },
        },
        Shape {
            name: "conditions",
            what: "a list-map of conditions with two key fields",
            text: || {
                fill(
                    &format!("{CR_HEAD}  conditions:\n"),
                    |t, i| {
                        let _ = writeln!(
                            t,
                            "  - {{type: Ready{i}, reason: R{i}, status: \"True\", message: ok}}"
                        );
                    },
                    "",
                )
            },
        },
        Shape {
            name: "conditions-repeated",
            what: "a list-map whose entries all repeat one key",
            text: || {
                fill(
                    &format!("{CR_HEAD}  conditions:\n"),
                    |t, _| t.push_str("  - {type: Ready, reason: R, status: \"True\"}\n"),
                    "",
                )
            },
        },
        Shape {
            name: "set",
            what: "a list-set of strings",
            text: || {
                fill(
                    &format!("{CR_HEAD}  tags:\n"),
                    |t, i| {
                        let _ = writeln!(t, "  - tag-{i}");
                    },
                    "",
                )
            },
        },
        Shape {
            name: "additional",
            what: "a map of strings under additionalProperties",
            text: || {
                fill(
                    &format!("{CR_HEAD}  labels:\n"),
                    |t, i| {
                        let _ = writeln!(t, "    key{i}: value");
                    },
                    "",
                )
            },
        },
        Shape {
            name: "unknown-keys",
            what: "a strict object with one unknown field per line",
            text: || {
                fill(
                    &format!("{CR_HEAD}  strict:\n"),
                    |t, i| {
                        let _ = writeln!(t, "    resourceNam{i}: x");
                    },
                    "",
                )
            },
        },
        Shape {
            name: "long-key",
            what: "a strict object with one unknown field of 32 MiB",
            // An implicit key has at most 1,024 characters: a longer one is explicit.
            text: || {
                format!(
                    "{CR_HEAD}  strict:\n    ? {}\n    : 1\n",
                    "resourceName".repeat(TARGET / 12 - 16)
                )
            },
        },
    ]
}

/// A run's wall-clock time and the CPU time of the thread that ran it: on
/// a machine shared with other work the second is the one to compare.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Timing {
    wall: Duration,
    cpu: Duration,
}

fn timed<T>(mut run: impl FnMut() -> T) -> (T, Timing) {
    let mut samples = Vec::with_capacity(REPEATS);
    let mut last = None;
    for _ in 0..REPEATS {
        // The previous result is dropped first, so that the peak is one result's.
        drop(last.take());
        let (start, cpu_start) = (Instant::now(), thread_cpu());
        let result = black_box(run());
        samples.push(Timing {
            wall: start.elapsed(),
            cpu: thread_cpu().saturating_sub(cpu_start),
        });
        last = Some(result);
    }
    samples.sort();
    let median = samples[samples.len() / 2];
    (last.expect("at least one repeat"), median)
}

/// The CPU time (user and system) of this thread so far, from
/// `/proc/thread-self/stat` in clock ticks of 10 ms; zero where unknown.
fn thread_cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap_or_default();
    // Fields after the command name, which is in parentheses: utime and
    // stime are the 12th and 13th of them.
    let ticks: u64 = stat
        .rsplit_once(')')
        .map(|(_, rest)| {
            rest.split_whitespace()
                .skip(11)
                .take(2)
                .filter_map(|field| field.parse::<u64>().ok())
                .sum()
        })
        .unwrap_or(0);
    Duration::from_millis(ticks * 10)
}

fn milliseconds(timing: Timing) -> String {
    format!(
        "{:.0} ms (cpu {:.0} ms)",
        timing.wall.as_secs_f64() * 1e3,
        timing.cpu.as_secs_f64() * 1e3
    )
}

/// The peak resident set of this process, from `/proc/self/status`.
fn peak_rss() -> String {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix("VmHWM:").map(|v| v.trim().to_owned()))
        })
        .unwrap_or_else(|| "unknown".to_owned())
}

fn main() {
    let wanted: Vec<String> = std::env::args()
        .skip(1)
        .filter(|arg| !arg.starts_with('-'))
        .collect();
    let crds: Vec<Value> = serde_saphyr::from_multiple(CRD).expect("the bench crd parses");
    let catalog = CrdCatalog::from_documents(crds).expect("the bench crd loads");
    let limits = Limits::default();
    for shape in shapes() {
        if !wanted.is_empty() && !wanted.iter().any(|w| w == shape.name) {
            continue;
        }
        let text = (shape.text)();
        let size = text.len() as f64 / 1_048_576.0;
        let (loaded, load) = timed(|| yaml::load_str(&text, &limits));
        // The peak so far is the input's and one loaded tree's.
        let load_peak = peak_rss();
        let documents = match loaded {
            Ok(documents) => documents,
            Err(err) => {
                println!(
                    "{:<20} {size:5.1} MiB  refused in {}: {err}  ({})",
                    shape.name,
                    milliseconds(load),
                    shape.what
                );
                continue;
            }
        };
        let objects = yaml::objects(&documents);
        let (json, convert) = timed(|| objects.iter().map(|o| o.to_json()).collect::<Vec<_>>());
        let (violations, validate) = timed(|| {
            json.iter()
                .filter_map(|object| catalog.validate(object).ok())
                .map(|found| found.len())
                .sum::<usize>()
        });
        println!(
            "{:<20} {size:5.1} MiB  load {:>7}  to_json {:>7}  validate {:>7}  {} nodes, {violations} violations, peak rss after load {load_peak}  ({})",
            shape.name,
            milliseconds(load),
            milliseconds(convert),
            milliseconds(validate),
            documents.iter().map(count).sum::<usize>(),
            shape.what
        );
    }
    println!("peak rss: {}", peak_rss());
}

fn count(node: &Node) -> usize {
    1 + node.items().iter().map(count).sum::<usize>()
        + node
            .entries()
            .iter()
            .map(|e| count(&e.value))
            .sum::<usize>()
}
