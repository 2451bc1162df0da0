//! Hostile captures: inputs built to make a parser slow, large or wrong.
//! Each runs on its own thread under a deadline, so that a parser that
//! hangs or goes quadratic fails the test instead of stalling CI.

use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use zerohop_validate::judge::{self, Capture, Expectations};
use zerohop_validate::nccl::{self, log, results};
use zerohop_validate::{kind, perftest, smi_topo};

/// Generous for a debug build on a shared machine; linear parsing of these
/// inputs takes well under a second.
const DEADLINE: Duration = Duration::from_secs(30);

/// Runs `work` on a thread and returns its result, failing the test when
/// it runs past the deadline.
fn within_deadline<T: Send + 'static>(what: &str, work: impl FnOnce() -> T + Send + 'static) -> T {
    let (done, wait) = mpsc::channel();
    thread::spawn(move || {
        let _ = done.send(work());
    });
    wait.recv_timeout(DEADLINE)
        .unwrap_or_else(|_| panic!("{what}: ran past {DEADLINE:?}"))
}

#[test]
fn a_line_of_a_million_fake_headers_is_read_in_linear_time() {
    // Every marker is preceded by `]` with no `[` anywhere: a search for
    // the device's bracket that went back to the line's start would be
    // quadratic.
    let line = "x] a:b NCCL INFO ".repeat(250_000);
    let output = within_deadline("fake headers", move || nccl::parse(&line));
    assert_eq!(output.log.messages, 0);
}

#[test]
fn open_brackets_before_an_mpi_tag_are_linear() {
    // Each `[` could start a tag; only the tag's own bytes may be looked at.
    let line = format!(
        "[1,0]<stdout>:# Avg bus bandwidth : 1 {}]<stdout>:\n",
        "[".repeat(4_000_000)
    );
    let kind = within_deadline("brackets", move || kind::detect(&line));
    assert_eq!(kind, Some(kind::Kind::Nccl));
}

#[test]
fn distinct_warnings_are_counted_up_to_a_cap() {
    let text: String = (0..100_000)
        .map(|i| {
            format!("h:1:2 [0] f.c:1 NCCL WARN peer {i} failed\nh:1:2 [0] f.c:1 NCCL WARN same\n")
        })
        .collect();
    let output = within_deadline("warnings", move || nccl::parse(&text));
    assert_eq!(output.log.warnings.len(), log::MAX_ITEMS);
    let same = output
        .log
        .warnings
        .iter()
        .find(|w| w.text == "same")
        .unwrap();
    assert_eq!(same.count, 100_000);
}

#[test]
fn glued_headers_with_long_host_names_stay_linear() {
    let host = "a".repeat(60);
    let mut text = format!("{host}:1:2 [0] NCCL INFO NCCL version 2.20.5\n");
    for _ in 0..20_000 {
        text.push_str(&format!("1{host}:1:2 [0] NCCL INFO x "));
    }
    text.push('\n');
    let output = within_deadline("glued", move || nccl::parse(&text));
    assert_eq!(output.log.messages, 20_001);
    assert_eq!(output.log.hosts.len(), 1);
}

#[test]
fn a_row_of_a_million_cells_is_noted_and_not_kept() {
    let text = format!(
        "#  size count type redop root time algbw busbw #wrong time algbw busbw #wrong\n 1 2 float sum -1{}\n# Avg bus bandwidth : 1\n",
        " 1.0".repeat(1_000_000)
    );
    let output = within_deadline("wide row", move || nccl::parse(&text));
    assert!(output.tests.runs[0].rows.is_empty());
    assert_eq!(output.notes.total(), 1);
    // The note quotes an excerpt, not the row.
    assert!(output.notes.items()[0].what.len() < 400);
}

#[test]
fn tables_keep_at_most_their_cap_of_rows() {
    let mut text = String::from(
        "#  size count type redop root time algbw busbw #wrong time algbw busbw #wrong\n",
    );
    for size in 0..(results::MAX_ROWS + 1000) {
        text.push_str(&format!(
            "  {size} 1 float sum -1 1.0 0.1 0.1 0 1.0 0.1 0.1 0\n"
        ));
    }
    text.push_str("# Avg bus bandwidth : 0.1\n");
    let output = within_deadline("long table", move || nccl::parse(&text));
    assert_eq!(output.tests.runs[0].rows.len(), results::MAX_ROWS);
}

#[test]
fn a_matrix_of_too_many_devices_is_capped() {
    let labels: Vec<String> = (0..2000).map(|i| format!("GPU{i}")).collect();
    let mut text = format!("  {}  CPU Affinity\n", labels.join("  "));
    for label in labels.iter().take(600) {
        text.push_str(&format!("{label} {}\n", "SYS ".repeat(2000)));
    }
    let matrix = within_deadline("matrix", move || smi_topo::parse(&text));
    assert_eq!(matrix.columns.len(), smi_topo::MAX_DEVICES);
    assert_eq!(matrix.rows.len(), smi_topo::MAX_DEVICES);
}

#[test]
fn nul_bytes_and_control_characters_do_not_confuse_the_parsers() {
    let text = "\0\0# nThread 1\u{7}\n\u{1b}[31m BW peak[Gb/sec]\u{0}\n GID: \0\n".repeat(1000);
    let findings = within_deadline("controls", move || {
        let capture = Capture {
            name: "x",
            text: &text,
        };
        [kind::Kind::Nccl, kind::Kind::Perftest]
            .into_iter()
            .flat_map(|k| judge::judge_as(k, &capture, &Expectations::default()))
            .count()
    });
    assert!(findings > 0);
}

#[test]
fn every_parser_survives_every_capture_truncated_anywhere() {
    // A capture cut at any byte (on a character boundary) is still read:
    // the shapes of real output, cut where a killed job would cut them.
    let text = "\
# nccl-tests version 2.17.6 nccl-headers=22807 nccl-library=22807
# Collective test starting: all_reduce_perf
# nThread 1 nGpus 1 minBytes 8 maxBytes 16 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#  Rank  0 Group  0 Pid  1 on node-a device  0 [0000:61:00] NVIDIA L40S
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
           8             2     float     sum      -1mew0:1:1 [1] NCCL INFO AllReduce: opCount 0
    13.24    0.00    0.00      0    12.25    0.00    0.00      0
h:1:2 [0] ib_plugin.c:1615 NCCL WARN NET/IB : Got completion from peer 1.2.3.4<5> with status=12 opcode=129 len=65536 vendor err 129 (Recv)
 #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]
 65536      20000            98.01              98.01  \t\t   0.186932
GPU0\t X \tPIX\t0-1\t0
";
    let cuts: Vec<usize> = (0..=text.len())
        .filter(|i| text.is_char_boundary(*i))
        .collect();
    within_deadline("truncations", move || {
        for cut in cuts {
            let part = &text[..cut];
            let _ = nccl::parse(part);
            let _ = perftest::parse(part);
            let _ = smi_topo::parse(part);
            let _ = judge::judge(
                &Capture {
                    name: "cut",
                    text: part,
                },
                &Expectations::default(),
            );
        }
    });
}
