//! Which tool wrote a capture, told from its content (never from its
//! name: a capture is saved as `out.txt` as often as `nccl.log`).
//!
//! Each kind has marker lines only its tool prints; the kind with the most
//! marker lines wins, the order of [`Kind::ALL`] breaking ties.

use std::fmt;

use crate::text::lines;

/// The kinds of capture zerohop reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// nccl-tests output and/or `NCCL_DEBUG` messages.
    Nccl,
    /// perftest (`ib_write_bw`, `ib_read_lat` …).
    Perftest,
    /// `nvidia-smi topo -m` or `-mp`.
    NvidiaSmiTopo,
    /// `gdscheck -p`.
    Gdscheck,
    /// `gdsio` results, `gdsio_verify`, or gdsio's usage.
    Gdsio,
    /// `/proc/driver/nvidia-fs/stats`.
    NvfsStats,
    /// `show_gids`.
    ShowGids,
    /// `mount` output or `/proc/mounts`.
    Mounts,
}

impl Kind {
    /// Every kind, in tie-breaking order.
    pub const ALL: [Kind; 8] = [
        Kind::Nccl,
        Kind::Perftest,
        Kind::NvidiaSmiTopo,
        Kind::Gdscheck,
        Kind::NvfsStats,
        Kind::Gdsio,
        Kind::ShowGids,
        Kind::Mounts,
    ];

    /// The kebab-case name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Nccl => "nccl",
            Kind::Perftest => "perftest",
            Kind::NvidiaSmiTopo => "nvidia-smi-topo",
            Kind::Gdscheck => "gdscheck",
            Kind::Gdsio => "gdsio",
            Kind::NvfsStats => "nvidia-fs-stats",
            Kind::ShowGids => "show-gids",
            Kind::Mounts => "mounts",
        }
    }

    /// How to capture this tool's whole output again, without a terminal in
    /// between: the command a fix about a cut or garbled capture of this
    /// kind names (a gdscheck capture is not rerun with `all_reduce_perf`).
    pub fn capture_command(self) -> &'static str {
        match self {
            Kind::Nccl => "all_reduce_perf -b 8 -e 8G -f 2 -g 1 2>&1 | tee nccl.log",
            Kind::Perftest => {
                "ib_write_bw -d mlx5_0 --report_gbits -D 10 PEER_IP 2>&1 | tee perftest.log"
            }
            Kind::NvidiaSmiTopo => "nvidia-smi topo -m > topo.txt",
            Kind::Gdscheck => "/usr/local/cuda/gds/tools/gdscheck -p > gdscheck.txt 2>&1",
            Kind::Gdsio => "gdsio -f FILE -d 0 -w 4 -s 1G -i 1M -x 0 -I 0 2>&1 | tee gdsio.log",
            Kind::NvfsStats => "cat /proc/driver/nvidia-fs/stats > nvidia-fs-stats.txt",
            Kind::ShowGids => "show_gids > gids.txt",
            Kind::Mounts => "mount > mounts.txt",
        }
    }

    /// Whether `line` (cleaned, trimmed) is a line only this kind prints.
    fn marks(self, line: &str) -> bool {
        match self {
            Kind::Nccl => {
                line.contains(" NCCL INFO ")
                    || line.contains(" NCCL WARN ")
                    || line.starts_with("# nThread ")
                    || line.starts_with("# nccl-tests version")
                    || line.starts_with("# Avg bus bandwidth")
                    || line.starts_with("# Out of bounds values")
                    || line.starts_with("NCCL version ")
                    || line.contains(": Test NCCL failure ")
                    || line.contains(": Test CUDA failure ")
                    || line.contains(": Test timeout (")
                    || (line.starts_with('#') && line.contains("busbw"))
            }
            Kind::Perftest => {
                line.contains("BW peak[")
                    || line.contains("t_avg[usec]")
                    || (line.ends_with("Test")
                        && (line.contains(" BW ") || line.contains("Latency")))
                    || line.starts_with("Dual-port")
                    || line.starts_with("Couldn't allocate MR")
                    || line.starts_with("Couldn't connect to ")
                    || line.contains("Unable to init the socket connection")
                    || line.starts_with("Parser function exited with Error")
                    || line.contains("Waiting for client")
                    || line.starts_with("Couldn't create IB resources")
                    || line.starts_with("Completion with error")
            }
            Kind::NvidiaSmiTopo => {
                (line.starts_with("GPU0") && (line.contains("CPU Affinity") || line.contains(" X")))
                    || line.starts_with("NIC Legend")
                    || line.contains("= Connection traversing")
            }
            Kind::Gdscheck => {
                line.starts_with("GDS release version")
                    || line.ends_with("CONFIGURATION:")
                    || line.starts_with("Platform verification")
                    || line.starts_with("properties.")
                    || line.starts_with("nvidia_fs version:")
                    || (line.starts_with("GPU index ") && line.contains("GDS"))
            }
            Kind::Gdsio => {
                line.starts_with("IoType:")
                    || line.starts_with("Data Verification")
                    || line.starts_with("gdsio version")
                    || line.starts_with("xfer_type:")
                    || line.contains("io_requested :")
            }
            Kind::NvfsStats => {
                line.starts_with("NVFS statistics")
                    || line.starts_with("NVFS Driver(")
                    || line.starts_with("Bar1-map")
                    || line.starts_with("Mellanox PeerDirect Supported:")
                    || line.starts_with("IO stats:")
            }
            Kind::ShowGids => {
                line.starts_with("n_gids_found=")
                    || (line.starts_with("DEV") && line.contains("GID") && line.contains("INDEX"))
                    || (line.split_whitespace().count() >= 5
                        && line.split_whitespace().any(|w| w == "v1" || w == "v2")
                        && line
                            .split_whitespace()
                            .nth(3)
                            .is_some_and(|g| g.matches(':').count() == 7))
            }
            Kind::Mounts => {
                (line.contains(" on ") && line.contains(" type ") && line.ends_with(')'))
                    || proc_mounts_line(line)
            }
        }
    }
}

/// A `/proc/mounts` line: `SOURCE DIR FSTYPE OPTIONS 0 0`.
fn proc_mounts_line(line: &str) -> bool {
    let fields: Vec<&str> = line.split_whitespace().collect();
    fields.len() == 6
        && fields[1].starts_with('/')
        && (fields[3].contains(',') || fields[3] == "rw" || fields[3] == "ro")
        && fields[4..]
            .iter()
            .all(|f| f.bytes().all(|b| b.is_ascii_digit()))
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The kind of `text`, or `None` when no line marks any kind.
pub fn detect(text: &str) -> Option<Kind> {
    let mut scores = [0usize; Kind::ALL.len()];
    for line in lines(text) {
        let trimmed = line.text.trim();
        if trimmed.is_empty() {
            continue;
        }
        for (score, kind) in scores.iter_mut().zip(Kind::ALL) {
            if kind.marks(trimmed) {
                *score += 1;
            }
        }
    }
    let best = scores.iter().copied().max().filter(|best| *best > 0)?;
    Kind::ALL
        .into_iter()
        .zip(scores)
        .find(|(_, score)| *score == best)
        .map(|(kind, _)| kind)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn each_tool_is_recognised_by_its_lines() {
        let cases = [
            (
                "# nThread 1 nGpus 8 minBytes 1\n# Avg bus bandwidth : 1\n",
                Kind::Nccl,
            ),
            (
                "h:1:2 [0] NCCL INFO NET/IB : No device found.\n",
                Kind::Nccl,
            ),
            (
                " #bytes #iterations BW peak[Gb/sec] BW average[Gb/sec]\n",
                Kind::Perftest,
            ),
            (
                "Couldn't allocate MR\nfailed to create mr\n",
                Kind::Perftest,
            ),
            (
                "\tGPU0\tGPU1\tCPU Affinity\nGPU0\t X \tNV4\n",
                Kind::NvidiaSmiTopo,
            ),
            (
                " GDS release version: 1.13\n Platform verification succeeded\n",
                Kind::Gdscheck,
            ),
            ("IoType: READ XferType: GPUD Threads: 1\n", Kind::Gdsio),
            (
                "GDS Version: 1\nNVFS statistics(ver: 4.0)\nIO stats: Disabled\n",
                Kind::NvfsStats,
            ),
            (
                "mlx5_3\t1\t3\t0000:0000:0000:0000:0000:ffff:c0a8:0a02\t192.168.10.2\tv2\tnet1\nn_gids_found=1\n",
                Kind::ShowGids,
            ),
            ("a:/x on /mnt type nfs4 (rw,proto=rdma)\n", Kind::Mounts),
            ("srv:/x /mnt/x nfs4 rw,proto=tcp 0 0\n", Kind::Mounts),
        ];
        for (text, kind) in cases {
            assert_eq!(detect(text), Some(kind), "{text}");
        }
        assert_eq!(detect("hello\nworld\n"), None);
        assert_eq!(detect(""), None);
    }

    proptest! {
        #[test]
        fn detection_never_panics(text in "(\\PC{0,60}\n){0,12}") {
            let _ = detect(&text);
        }
    }
}
