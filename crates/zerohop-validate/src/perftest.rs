//! The output of perftest (`ib_write_bw`, `ib_read_lat` and the others),
//! client or server side, also both interleaved in one file.
//!
//! Read: the banner (device, QPs, MTU, link type, GID index, rdma_cm,
//! TOS), the GIDs of the connection, the bandwidth table in MB/sec, MiB/sec
//! or Gb/sec (also one size in duration mode, where the peak is 0.00), the
//! latency tables, the CUDA lines of `--use_cuda`, and the failure lines
//! (`src/perftest_parameters.[ch]`, `src/perftest_communication.c`,
//! `src/cuda_memory.c` of linux-rdma/perftest).

use crate::notes::Notes;
use crate::text::{excerpt, lines};

/// The most rows kept per table and runs per capture.
pub const MAX_ROWS: usize = 4096;

/// Everything read from one perftest capture.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PerftestOutput {
    /// Each banner and its table (a client and a server make two).
    pub runs: Vec<PerftestRun>,
    /// GPU memory (`--use_cuda`), when the CUDA lines are there.
    pub cuda: Option<CudaUse>,
    /// Failure lines, in order.
    pub failures: Vec<Failure>,
    /// `Changing to active mtu - N`: line and the active MTU in bytes.
    pub mtu_lowered: Option<(u32, u32)>,
    /// What could not be read.
    pub notes: Notes,
}

/// One test: its banner and its table.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PerftestRun {
    /// The first line of the run.
    pub line: u32,
    /// `RDMA_Write BW Test`.
    pub test: Option<String>,
    /// The server side (it printed `Waiting for client …` first).
    pub server: bool,
    /// `Device`.
    pub device: Option<String>,
    /// `Number of qps`.
    pub qps: Option<u32>,
    /// `Mtu`, bytes, with its line.
    pub mtu: Option<(u32, u32)>,
    /// `Link type`: `IB` or `Ethernet` (RoCE), with its line.
    pub link_type: Option<(u32, String)>,
    /// `GID index`, with its line.
    pub gid_index: Option<(u32, u32)>,
    /// `rdma_cm QPs : ON|OFF`.
    pub rdma_cm: Option<bool>,
    /// `TOS`.
    pub tos: Option<u32>,
    /// The first local GID (`GID: 00:00:…:255:255:10:06:145:33`), with its line.
    pub local_gid: Option<(u32, Gid)>,
    /// The first remote GID, with its line.
    pub remote_gid: Option<(u32, Gid)>,
    /// The bandwidth table.
    pub bandwidth: Vec<BandwidthRow>,
    /// The latency table.
    pub latency: Vec<LatencyRow>,
}

/// A GID as perftest prints it: sixteen decimal bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gid(pub [u8; 16]);

impl Gid {
    /// Parses `00:00:…:255:255:10:06:145:33`.
    pub fn parse(text: &str) -> Option<Gid> {
        let mut bytes = [0u8; 16];
        let mut parts = text.trim().split(':');
        for byte in &mut bytes {
            *byte = parts.next()?.parse().ok()?;
        }
        parts.next().is_none().then_some(Gid(bytes))
    }

    /// The IPv4 address of an IPv4-mapped GID (`::ffff:a.b.c.d`, RoCE v2).
    pub fn ipv4(&self) -> Option<String> {
        let b = &self.0;
        (b[..10].iter().all(|x| *x == 0) && b[10] == 0xff && b[11] == 0xff)
            .then(|| format!("{}.{}.{}.{}", b[12], b[13], b[14], b[15]))
    }

    /// Whether the GID is link-local (`fe80::/64`), made from the MAC
    /// address: routable in no subnet but its own.
    pub fn link_local(&self) -> bool {
        self.0[0] == 0xfe && self.0[1] & 0xc0 == 0x80
    }
}

/// One row of a bandwidth table, in Gb/s whatever the printed unit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BandwidthRow {
    /// Its line.
    pub line: u32,
    /// Message size.
    pub bytes: u64,
    /// Iterations.
    pub iterations: u64,
    /// `BW peak` (0 in duration mode, where it is not measured).
    pub peak_gbps: f64,
    /// `BW average`.
    pub average_gbps: f64,
    /// `MsgRate[Mpps]`.
    pub message_rate_mpps: f64,
}

/// One row of a latency table, µs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LatencyRow {
    /// Its line.
    pub line: u32,
    /// Message size.
    pub bytes: u64,
    /// Iterations.
    pub iterations: u64,
    /// `t_typical` (the median), absent in duration mode.
    pub typical: Option<f64>,
    /// `t_avg`.
    pub average: f64,
    /// `t_min`, `t_max`, `t_stdev`, absent in duration mode.
    pub spread: Option<(f64, f64, f64)>,
    /// `99% percentile`.
    pub p99: Option<f64>,
    /// `99.9% percentile`.
    pub p999: Option<f64>,
}

/// GPU memory used by the test.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CudaUse {
    /// The first CUDA line.
    pub line: u32,
    /// `device name = [NVIDIA A40]`.
    pub gpu: Option<String>,
    /// The GPU buffer was allocated (`cuMemAlloc() …`, `allocated GPU buffer …`).
    pub allocated: bool,
    /// `using DMA-BUF for GPU buffer …` was printed (perftest prints
    /// nothing about DMA-BUF when it is not used, nor in older releases).
    pub dmabuf: bool,
}

/// What a failure line says went wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureKind {
    /// `Couldn't allocate MR`: memory could not be registered.
    MemoryRegistration,
    /// `Couldn't connect to HOST:PORT`: no server answered.
    Connect,
    /// `Unable to init the socket connection` and the like.
    Socket,
    /// `Couldn't create IB resources` and the like (a consequence).
    Resources,
    /// `Unable to find the Infiniband/RoCE device`, `Couldn't get context`.
    Device,
    /// `Parser function exited with Error`: the command line was refused.
    Options,
    /// `Completion with error`: a work request failed.
    Completion,
    /// CUDA could not be used (`DMA-BUF is not supported on this GPU`…).
    Cuda,
}

/// One failure line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// Its line.
    pub line: u32,
    /// What went wrong.
    pub kind: FailureKind,
    /// The line, trimmed.
    pub text: String,
    /// `Failed status N: … syndrom 0xNN` after a completion error.
    pub status: Option<(u32, Option<u32>)>,
}

/// The layout of a table, from its header.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Table {
    /// `#bytes #iterations BW peak BW average MsgRate`; `sl` when the QoS
    /// layout has a `#sl` column; the factor to Gb/s.
    Bandwidth { sl: bool, to_gbps: f64 },
    /// `#bytes #iterations t_min t_max t_typical t_avg t_stdev 99% 99.9%`.
    Latency,
    /// `#bytes #iterations t_avg tps` (duration mode).
    LatencyDuration,
}

/// Reads a perftest capture.
pub fn parse(text: &str) -> PerftestOutput {
    let mut out = PerftestOutput::default();
    let mut run: Option<PerftestRun> = None;
    let mut table: Option<Table> = None;
    let mut waiting = false;
    // Whether the GID lines that follow belong to the remote side.
    let mut remote_side = false;
    for line in lines(text) {
        let number = line.number;
        let trimmed = line.text.trim();
        if trimmed.is_empty() {
            continue;
        }
        // Rules and the star box around `Waiting for client to connect`
        // end a table.
        if trimmed.starts_with("----") || trimmed.starts_with('*') {
            table = None;
            if trimmed.contains("Waiting for client") {
                waiting = true;
            }
            continue;
        }
        if let Some(kind) = failure_kind(trimmed) {
            out.failures.push(Failure {
                line: number,
                kind,
                text: excerpt(trimmed),
                status: None,
            });
            table = None;
            continue;
        }
        if let Some(rest) = trimmed.strip_prefix("Failed status") {
            if let Some(last) = out.failures.last_mut() {
                last.status = completion_status(rest);
            }
            continue;
        }
        if trimmed.contains("Waiting for client") {
            waiting = true;
            continue;
        }
        if cuda_line(number, trimmed, &mut out.cuda) {
            continue;
        }
        if let Some(rest) = trimmed.strip_prefix("Changing to active mtu - ") {
            out.mtu_lowered = rest
                .trim()
                .parse()
                .ok()
                .and_then(mtu_bytes)
                .map(|bytes| (number, bytes));
            continue;
        }
        if trimmed.ends_with("Test") && (trimmed.contains(" BW ") || trimmed.contains("Latency")) {
            push_run(&mut out.runs, run.take());
            run = Some(PerftestRun {
                line: number,
                test: Some(trimmed.to_owned()),
                server: std::mem::take(&mut waiting),
                ..PerftestRun::default()
            });
            continue;
        }
        if trimmed.starts_with("#bytes") {
            table = table_layout(trimmed);
            if table.is_none() {
                out.notes.push(
                    number,
                    format!("unknown table header `{}`", excerpt(trimmed)),
                );
            }
            // A table without a banner (a capture of the table alone), or
            // a second table after the first: a run of its own.
            let has_table = run
                .as_ref()
                .is_some_and(|r| !r.bandwidth.is_empty() || !r.latency.is_empty());
            if run.is_none() || has_table {
                let next = PerftestRun {
                    line: number,
                    server: std::mem::take(&mut waiting),
                    ..PerftestRun::default()
                };
                push_run(&mut out.runs, run.replace(next));
            }
            continue;
        }
        if let (Some(layout), Some(current)) = (table, run.as_mut()) {
            if !table_row(number, trimmed, layout, current) {
                out.notes.push(
                    number,
                    format!("unreadable table row `{}`", excerpt(trimmed)),
                );
            }
            continue;
        }
        if trimmed.starts_with("local address:") {
            remote_side = false;
        } else if trimmed.starts_with("remote address:") {
            remote_side = true;
        }
        if let Some(current) = run.as_mut() {
            banner_line(number, &line.text, remote_side, current);
        }
    }
    push_run(&mut out.runs, run);
    out
}

fn push_run(runs: &mut Vec<PerftestRun>, run: Option<PerftestRun>) {
    if let Some(run) = run
        && runs.len() < MAX_ROWS
    {
        runs.push(run);
    }
}

/// The failure a line reports, if it is a failure line.
fn failure_kind(text: &str) -> Option<FailureKind> {
    const KINDS: [(&str, FailureKind); 19] = [
        ("Couldn't allocate MR", FailureKind::MemoryRegistration),
        ("failed to create mr", FailureKind::MemoryRegistration),
        ("Failed to create MR", FailureKind::MemoryRegistration),
        ("Couldn't connect to ", FailureKind::Connect),
        ("Unable to init the socket connection", FailureKind::Socket),
        (
            "Unable to open file descriptor for socket connection",
            FailureKind::Socket,
        ),
        ("Unable to set up socket connection", FailureKind::Socket),
        (
            "Failed to exchange data between server and clients",
            FailureKind::Socket,
        ),
        ("Couldn't listen to port", FailureKind::Socket),
        ("Couldn't create IB resources", FailureKind::Resources),
        (
            "Unable to create the resources needed by comm struct",
            FailureKind::Resources,
        ),
        (
            "Unable to perform rdma_client function",
            FailureKind::Resources,
        ),
        (
            "Unable to find the Infiniband/RoCE device",
            FailureKind::Device,
        ),
        ("Couldn't get context for the device", FailureKind::Device),
        ("No IB devices found", FailureKind::Device),
        ("Parser function exited with Error", FailureKind::Options),
        ("cannot be used without CUDA", FailureKind::Options),
        ("Completion with error", FailureKind::Completion),
        ("DMA-BUF is not supported on this GPU", FailureKind::Cuda),
    ];
    KINDS
        .iter()
        .find(|(marker, _)| text.contains(marker))
        .map(|(_, kind)| *kind)
        .or_else(|| {
            (text.starts_with("cuInit")
                || text.starts_with("cuMemAlloc error")
                || text.contains("Couldn't init GPU context"))
            .then_some(FailureKind::Cuda)
        })
}

/// `status-IBV_WC_RETRY_EXC_ERR (12): wr_id 0 syndrom 0x81` or the older
/// ` status 12: wr_id 0 syndrom 0x81`.
fn completion_status(rest: &str) -> Option<(u32, Option<u32>)> {
    let status_text = match rest.find('(') {
        Some(open) => &rest[open + 1..],
        None => rest.trim_start_matches([' ', '-']),
    };
    let digits = status_text.bytes().take_while(u8::is_ascii_digit).count();
    let status = status_text[..digits].parse().ok()?;
    let syndrome = rest.split_once("syndrom 0x").and_then(|(_, hex)| {
        let end = hex
            .find(|c: char| !c.is_ascii_hexdigit())
            .unwrap_or(hex.len());
        u32::from_str_radix(&hex[..end], 16).ok()
    });
    Some((status, syndrome))
}

/// Reads a CUDA line into `cuda`; true when it was one.
fn cuda_line(number: u32, text: &str, cuda: &mut Option<CudaUse>) -> bool {
    let is_cuda = text == "initializing CUDA"
        || text.starts_with("Listing all CUDA devices")
        || text.starts_with("CUDA device ")
        || text.starts_with("Picking device No.")
        || text.starts_with("Picking GPU number")
        || text.contains("devices supporting CUDA")
        || text.contains("] device name = [")
        || text.contains("CUDA Ctx")
        || text.starts_with("cuMemAlloc")
        || text.starts_with("allocated GPU buffer")
        || text.starts_with("using DMA-BUF for GPU buffer")
        || text.starts_with("deallocating GPU buffer");
    if !is_cuda {
        return false;
    }
    let found = cuda.get_or_insert_with(|| CudaUse {
        line: number,
        gpu: None,
        allocated: false,
        dmabuf: false,
    });
    if let Some((_, name)) = text.split_once("device name = [") {
        found.gpu = Some(name.trim_end_matches(']').to_owned());
    }
    found.allocated |= text.starts_with("cuMemAlloc()") || text.starts_with("allocated GPU buffer");
    found.dmabuf |= text.starts_with("using DMA-BUF for GPU buffer");
    true
}

/// The MTU in bytes of `enum ibv_mtu` value `code` (1: 256 … 5: 4096).
fn mtu_bytes(code: u32) -> Option<u32> {
    (1..=5).contains(&code).then(|| 128 << code)
}

fn table_layout(header: &str) -> Option<Table> {
    if header.contains("BW peak[") {
        let to_gbps = if header.contains("[Gb/sec]") {
            1.0
        } else if header.contains("[MB/sec]") || header.contains("[MiB/sec]") {
            // perftest divides by 0x100000 for MB/sec (MiB really).
            1_048_576.0 * 8.0 / 1e9
        } else {
            return None;
        };
        Some(Table::Bandwidth {
            sl: header.contains("#sl"),
            to_gbps,
        })
    } else if header.contains("t_min[") {
        Some(Table::Latency)
    } else if header.contains("t_avg[") {
        Some(Table::LatencyDuration)
    } else {
        None
    }
}

/// Reads one table row into `run`; false when it does not fit.
fn table_row(number: u32, text: &str, table: Table, run: &mut PerftestRun) -> bool {
    let cells: Vec<f64> = match text
        .split_whitespace()
        .map(|t| t.parse::<f64>().ok().filter(|v| v.is_finite() && *v >= 0.0))
        .collect::<Option<Vec<f64>>>()
    {
        Some(cells) => cells,
        None => return false,
    };
    let whole = |v: f64| (v.fract() == 0.0).then_some(v as u64);
    match table {
        Table::Bandwidth { sl, to_gbps } => {
            let skip = usize::from(sl);
            if cells.len() < 5 + skip {
                return false;
            }
            let (Some(bytes), Some(iterations)) = (whole(cells[0]), whole(cells[1 + skip])) else {
                return false;
            };
            if run.bandwidth.len() < MAX_ROWS {
                run.bandwidth.push(BandwidthRow {
                    line: number,
                    bytes,
                    iterations,
                    peak_gbps: cells[2 + skip] * to_gbps,
                    average_gbps: cells[3 + skip] * to_gbps,
                    message_rate_mpps: cells[4 + skip],
                });
            }
        }
        Table::Latency => {
            if cells.len() < 9 {
                return false;
            }
            let (Some(bytes), Some(iterations)) = (whole(cells[0]), whole(cells[1])) else {
                return false;
            };
            if run.latency.len() < MAX_ROWS {
                run.latency.push(LatencyRow {
                    line: number,
                    bytes,
                    iterations,
                    typical: Some(cells[4]),
                    average: cells[5],
                    spread: Some((cells[2], cells[3], cells[6])),
                    p99: Some(cells[7]),
                    p999: Some(cells[8]),
                });
            }
        }
        Table::LatencyDuration => {
            if cells.len() < 3 {
                return false;
            }
            let (Some(bytes), Some(iterations)) = (whole(cells[0]), whole(cells[1])) else {
                return false;
            };
            if run.latency.len() < MAX_ROWS {
                run.latency.push(LatencyRow {
                    line: number,
                    bytes,
                    iterations,
                    typical: None,
                    average: cells[2],
                    spread: None,
                    p99: None,
                    p999: None,
                });
            }
        }
    }
    true
}

/// Reads the `key : value` pairs of a banner line (two per line, separated
/// by tabs) and the GID lines.
fn banner_line(number: u32, text: &str, remote_side: bool, run: &mut PerftestRun) {
    let mut segments: Vec<String> = Vec::new();
    for piece in text.split('\t') {
        // `rdma_cm QPs\t : ON`: a value on its own after a tab.
        match segments.last_mut() {
            Some(last) if piece.trim_start().starts_with(':') => last.push_str(piece),
            _ => segments.push(piece.to_owned()),
        }
    }
    for segment in &segments {
        let Some((key, value)) = segment.split_once(':') else {
            continue;
        };
        let value = value.trim();
        let number_value = || {
            value
                .split(|c: char| !c.is_ascii_digit())
                .next()?
                .parse()
                .ok()
        };
        match key.trim() {
            "Device" => run.device = Some(value.to_owned()),
            "Number of qps" => run.qps = number_value(),
            "Mtu" => run.mtu = number_value().map(|mtu| (number, mtu)),
            "Link type" => run.link_type = Some((number, value.to_owned())),
            "GID index" => run.gid_index = number_value().map(|index| (number, index)),
            "rdma_cm QPs" => run.rdma_cm = Some(value == "ON"),
            "TOS" => run.tos = number_value(),
            "GID" => {
                if let Some(gid) = Gid::parse(value) {
                    let side = if remote_side {
                        &mut run.remote_gid
                    } else {
                        &mut run.local_gid
                    };
                    side.get_or_insert((number, gid));
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    const ROCE: &str = "\
Requested mtu is higher than active mtu \n\
Changing to active mtu - 3
initializing CUDA
[pid = 4101, dev = 0] device name = [NVIDIA A40]
cuMemAlloc() of a 2097152 bytes GPU buffer
---------------------------------------------------------------------------------------
                    RDMA_Write BW Test
 Dual-port       : OFF\t\tDevice         : mlx5_1
 Number of qps   : 16\t\tTransport type : IB
 Mtu             : 1024[B]
 Link type       : Ethernet
 GID index       : 3
 rdma_cm QPs\t : ON
 Data ex. method : rdma_cm \tTOS    : 41
---------------------------------------------------------------------------------------
 local address: LID 0000 QPN 0x00c6 PSN 0x2986aa
 GID: 00:00:00:00:00:00:00:00:00:00:255:255:10:06:145:33
 remote address: LID 0000 QPN 0x00c6 PSN 0xb1023e
 GID: 00:00:00:00:00:00:00:00:00:00:255:255:10:06:145:32
---------------------------------------------------------------------------------------
 #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]
 65536      10384867         0.00               181.46 \t\t     0.346100
---------------------------------------------------------------------------------------
";

    #[test]
    fn a_roce_client_with_cuda_is_read() {
        let out = parse(ROCE);
        assert!(out.notes.is_empty(), "{:?}", out.notes);
        assert_eq!(out.mtu_lowered, Some((2, 1024)));
        let cuda = out.cuda.as_ref().unwrap();
        assert_eq!(cuda.gpu.as_deref(), Some("NVIDIA A40"));
        assert!(cuda.allocated);
        assert!(!cuda.dmabuf);
        let run = &out.runs[0];
        assert!(!run.server);
        assert_eq!(run.device.as_deref(), Some("mlx5_1"));
        assert_eq!(run.qps, Some(16));
        assert_eq!(run.mtu.map(|m| m.1), Some(1024));
        assert_eq!(
            run.link_type.as_ref().map(|l| l.1.as_str()),
            Some("Ethernet")
        );
        assert_eq!(run.gid_index.map(|g| g.1), Some(3));
        assert_eq!(run.rdma_cm, Some(true));
        assert_eq!(run.tos, Some(41));
        assert_eq!(
            run.local_gid.unwrap().1.ipv4().as_deref(),
            Some("10.6.145.33")
        );
        assert_eq!(
            run.remote_gid.unwrap().1.ipv4().as_deref(),
            Some("10.6.145.32")
        );
        assert_eq!(run.bandwidth[0].average_gbps, 181.46);
        assert_eq!(run.bandwidth[0].peak_gbps, 0.0);
    }

    #[test]
    fn mb_per_second_is_converted_to_gigabits() {
        let out = parse(
            " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n 8388608    20000            24056.74            24056.72\t\t   0.003007\n",
        );
        let row = out.runs[0].bandwidth[0];
        assert!(
            (row.average_gbps - 201.80).abs() < 0.01,
            "{}",
            row.average_gbps
        );
    }

    #[test]
    fn latency_tables_are_read() {
        let out = parse(
            " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec]\n 2       1000          5.35           11.78        5.49               5.50           0.18            5.74                   11.78\n",
        );
        let row = out.runs[0].latency[0];
        assert_eq!(row.typical, Some(5.49));
        assert_eq!(row.p999, Some(11.78));
        assert_eq!(row.spread, Some((5.35, 11.78, 0.18)));
    }

    #[test]
    fn failures_carry_their_completion_status() {
        let out = parse(
            " Completion with error at client\n Failed status 12: wr_id 0 syndrom 0x81\n scnt=128, ccnt=0\n Failed status-IBV_WC_REM_ACCESS_ERR (10): wr_id 0 syndrom 0x88\nCouldn't connect to 192.168.125.211:18515\n",
        );
        assert_eq!(out.failures[0].kind, FailureKind::Completion);
        assert_eq!(out.failures[0].status, Some((10, Some(0x88))));
        assert_eq!(out.failures[1].kind, FailureKind::Connect);
        assert_eq!(
            completion_status(" 12: wr_id 0 syndrom 0x81"),
            Some((12, Some(0x81)))
        );
    }

    #[test]
    fn gids_are_classified() {
        let mapped = Gid::parse("00:00:00:00:00:00:00:00:00:00:255:255:10:224:04:233").unwrap();
        assert_eq!(mapped.ipv4().as_deref(), Some("10.224.4.233"));
        let local = Gid::parse("254:128:00:00:00:00:00:00:12:176:16:255:254:52:10:173").unwrap();
        assert!(local.link_local());
        assert_eq!(local.ipv4(), None);
        assert_eq!(Gid::parse("1:2:3"), None);
    }

    #[test]
    fn a_row_that_does_not_fit_is_noted() {
        let out = parse(
            " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n 65536 x\n",
        );
        assert_eq!(out.notes.total(), 1);
    }

    proptest! {
        #[test]
        fn no_input_panics(text in "(\\PC{0,60}\n){0,12}") {
            let _ = parse(&text);
        }

        #[test]
        fn no_mix_of_the_grammar_panics(text in "(( #bytes| #iterations| BW peak\\[Gb/sec\\]| BW peak\\[MB/sec\\]| t_min\\[| t_avg\\[| #sl|[0-9. ]|Failed status-|\\(|syndrom 0x|GID: |:|255|Mtu|Link type|\\t|---- |Changing to active mtu - ){0,20}\n){0,10}") {
            let _ = parse(&text);
        }
    }
}
