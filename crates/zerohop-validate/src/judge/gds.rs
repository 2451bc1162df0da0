//! Judgements of GPUDirect Storage outputs: `gdscheck -p`, `gdsio`,
//! `/proc/driver/nvidia-fs/stats`.

use zerohop_core::{Finding, Remediation, Status};

use crate::declare_judgement;
use crate::gds::gdscheck::GdsCheck;
use crate::gds::gdsio::GdsioOutput;
use crate::gds::nvfs_stats::NvfsStats;
use crate::judge::{Capture, percent, rate};

declare_judgement! {
    /// `gdscheck -p` verified the platform.
    ///
    /// ## What it checks
    /// The last line of `gdscheck -p`: `Platform verification succeeded`,
    /// or anything else (an error, or no such line in a cut capture).
    /// The verdict is gdscheck's own (NVIDIA GPUDirect Storage Installation and
    /// Troubleshooting Guide, "Verifying a Successful GDS Installation").
    ///
    /// ## Why it matters
    /// It is GPUDirect Storage's own verdict on the driver (`nvidia_fs`),
    /// the GPUs and the platform; when it fails, cuFile falls back to
    /// compatibility mode (POSIX I/O through host memory) or fails.
    ///
    /// ## How to fix
    /// Read the lines above the verdict: the GPU and IOMMU lines are judged
    /// on their own here; `zerohop doctor --only gds` checks `nvidia_fs`,
    /// `cufile.json` and the mounts.
    ///
    /// ## Example
    ///
    /// The capture `gdscheck-fail.txt`, one of the hand-written captures of
    /// `crates/zerohop-validate/tests/judgements.rs`:
    ///
    /// ```text
    ///  GDS release version: 1.13.1.3
    ///  GPU index 0 Tesla T4 bar:1 bar size (MiB):256 does not support GDS
    ///  IOMMU: enabled
    ///  Platform verification error
    /// ```
    ///
    /// `zerohop validate parse gdscheck-fail.txt` says:
    ///
    /// ```text
    /// gds
    ///   fail           VAL401  gds-platform-unverified  gdscheck-fail.txt: platform verification did not succeed
    ///                  gdscheck-fail.txt:4 = Platform verification
    ///
    /// what to fix first
    ///   1. VAL401 gds-platform-unverified (gdscheck-fail.txt): platform verification did not succeed
    ///      fix: read gdscheck's lines above the verdict and check the node
    ///        zerohop doctor --only gds
    /// ```
    pub static GDS_PLATFORM = {
        id: "VAL401",
        name: "gds-platform-unverified",
        group: Gds,
        severity: Error,
    };
}

declare_judgement! {
    /// Every GPU supports GPUDirect Storage.
    ///
    /// ## What it checks
    /// Each `GPU index N NAME bar:1 bar size (MiB):S supports GDS` line of
    /// `gdscheck -p`, and libcufile's `GPU N NAME does not have supported
    /// architecture, has 5 requires >= 6` for a GPU below compute capability
    /// 6.0, which GDS requires (the maintainers in NVIDIA/MagnumIO#5, 2021:
    /// "a compute major capability greater than or equal to 6"; the
    /// Installation and Troubleshooting Guide does not say it); the line as GDS
    /// 0.9.1.5 prints it for a Quadro K1200, developer-onizuka/gpudirect_storage
    /// `README.md`, in `tests/fixtures/`).
    ///
    /// ## Why it matters
    /// A GPU without GDS support (or with a BAR1 too small to map its
    /// buffers) makes cuFile fall back to bounce buffers in host memory.
    ///
    /// ## How to fix
    /// Use a data-centre or workstation GPU with a large BAR1 (`nvidia-smi -q
    /// | grep -A3 BAR1`), and the open kernel module of a driver that
    /// supports it.
    ///
    /// ## Example
    ///
    /// The capture `gdscheck-gpu.txt`, one of the hand-written captures of
    /// `crates/zerohop-validate/tests/judgements.rs`:
    ///
    /// ```text
    ///  GDS release version: 1.13.1.3
    ///  GPU index 0 Tesla T4 bar:1 bar size (MiB):256 does not support GDS
    ///  Platform verification succeeded
    /// ```
    ///
    /// `zerohop validate parse gdscheck-gpu.txt` says:
    ///
    /// ```text
    /// gds
    ///   fail           VAL402  gds-gpu-unsupported  gdscheck-gpu.txt GPU 0: Tesla T4 does not support GDS
    ///                  gdscheck-gpu.txt:2 = Tesla T4 bar size 256 MiB
    ///
    /// what to fix first
    ///   1. VAL402 gds-gpu-unsupported (gdscheck-gpu.txt GPU 0): Tesla T4 does not support GDS
    ///      fix: use a GPU with GDS support and a large BAR1, on the open kernel module
    ///        nvidia-smi -q | grep -A3 -i bar1
    /// ```
    pub static GDS_GPU_SUPPORT = {
        id: "VAL402",
        name: "gds-gpu-unsupported",
        group: Gds,
        severity: Error,
    };
}

declare_judgement! {
    /// The IOMMU does not stand between storage and GPU memory.
    ///
    /// ## What it checks
    /// `IOMMU: disabled|enabled` in `gdscheck -p`'s platform information.
    /// GDS needs the IOMMU off or in pass-through mode (NVIDIA GPUDirect
    /// Storage Installation and Troubleshooting Guide, "Installing GPUDirect
    /// Storage", "Before You Install GDS").
    ///
    /// ## Why it matters
    /// With the IOMMU translating DMA, peer-to-peer transfers between an
    /// NVMe or RDMA device and GPU memory fail or are redirected through
    /// the root complex; GPUDirect Storage then falls back to host memory.
    ///
    /// ## How to fix
    /// Boot with the IOMMU in passthrough (`iommu=pt`, with `intel_iommu=on`
    /// or `amd_iommu=on` where SR-IOV needs it) or off; `zerohop doctor
    /// --only KRN001` checks the kernel command line.
    ///
    /// ## Example
    ///
    /// The capture `gdscheck-iommu.txt`, one of the hand-written captures of
    /// `crates/zerohop-validate/tests/judgements.rs`:
    ///
    /// ```text
    ///  GDS release version: 1.13.1.3
    ///  IOMMU: enabled
    ///  Platform verification succeeded
    /// ```
    ///
    /// `zerohop validate parse gdscheck-iommu.txt` says:
    ///
    /// ```text
    /// gds
    ///   warn           VAL403  gds-iommu-enabled  gdscheck-iommu.txt: the IOMMU is enabled: peer-to-peer DMA into GPU memory fails or is redirected
    ///                  gdscheck-iommu.txt:2 = IOMMU: enabled
    ///
    /// what to fix first
    ///   1. VAL403 gds-iommu-enabled (gdscheck-iommu.txt): the IOMMU is enabled: peer-to-peer DMA into GPU memory fails or is redirected
    ///      fix: boot with iommu=pt (or the IOMMU off)
    ///        zerohop doctor --only KRN001
    /// ```
    pub static GDS_IOMMU = {
        id: "VAL403",
        name: "gds-iommu-enabled",
        group: Gds,
        severity: Warning,
    };
}

declare_judgement! {
    /// Reports whether cuFile may fall back to POSIX I/O silently.
    ///
    /// ## What it checks
    /// `properties.use_compat_mode` in the cuFile configuration `gdscheck -p`
    /// prints (`true`/`1` or `false`/`0`).
    /// The key is `cufile.json`'s (NVIDIA GPUDirect Storage Benchmarking and
    /// Configuration Guide, "GPUDirect Storage Parameters";
    /// `zerohop_known::cufile`).
    ///
    /// ## Why it matters
    /// With compatibility mode on, cuFile reads through host memory whenever
    /// the direct path is unavailable, without an error: the job works and
    /// the zero-copy path is gone. It is a sensible default for production;
    /// for validation, it hides failures.
    ///
    /// ## How to fix
    /// To prove the direct path, run a test with `use_compat_mode: false` in
    /// a copy of `cufile.json` (`CUFILE_ENV_PATH_JSON=/tmp/cufile.json`) and
    /// watch `/proc/driver/nvidia-fs/stats`.
    ///
    /// ## Example
    ///
    /// The capture `gdscheck-compat.txt`, one of the hand-written captures of
    /// `crates/zerohop-validate/tests/judgements.rs`:
    ///
    /// ```text
    ///  GDS release version: 1.13.1.3
    ///  properties.use_compat_mode : true
    ///  Platform verification succeeded
    /// ```
    ///
    /// `zerohop validate parse gdscheck-compat.txt` says:
    ///
    /// ```text
    /// gds
    ///   info           VAL404  gds-compat-mode  gdscheck-compat.txt: compatibility mode is on: cuFile falls back to POSIX I/O through host memory without an error when the direct path is unavailable
    /// ```
    pub static GDS_COMPAT_MODE = {
        id: "VAL404",
        name: "gds-compat-mode",
        group: Gds,
        severity: Info,
    };
}

declare_judgement! {
    /// Reports the storage back ends GPUDirect Storage supports here.
    ///
    /// ## What it checks
    /// The driver configuration of `gdscheck -p` (`NVMe : Supported`,
    /// `NFS : Unsupported` …) and the RDMA peer-direct switch.
    /// The lines are gdscheck's `DRIVER CONFIGURATION` section (NVIDIA
    /// GPUDirect Storage Installation and Troubleshooting Guide, "Verifying a
    /// Successful GDS Installation").
    ///
    /// ## Why it matters
    /// A data set on NFS over RDMA, NVMe-oF or a parallel file system uses
    /// GDS only when that back end is supported; otherwise reads go through
    /// host memory.
    ///
    /// ## How to fix
    /// Enable the back end the data lives on (the NFS/RDMA and NVMe-oF
    /// support of `nvidia_fs`, the file system's GDS client) and check
    /// `zerohop doctor --only gds,nfs,nvme`.
    ///
    /// ## Example
    ///
    /// The capture `gdscheck-backends.txt`, one of the hand-written captures of
    /// `crates/zerohop-validate/tests/judgements.rs`:
    ///
    /// ```text
    ///  GDS release version: 1.13.1.3
    ///  NVMe               : Unsupported
    ///  NFS                : Unsupported
    ///  Platform verification succeeded
    /// ```
    ///
    /// `zerohop validate parse gdscheck-backends.txt` says:
    ///
    /// ```text
    /// gds
    ///   info           VAL405  gds-backends  gdscheck-backends.txt: supported: none
    /// ```
    pub static GDS_BACKENDS = {
        id: "VAL405",
        name: "gds-backends",
        group: Gds,
        severity: Info,
    };
}

declare_judgement! {
    /// GPUDirect reads and writes are not slower than the CPU path.
    ///
    /// ## What it checks
    /// Each `IoType: … XferType: … Throughput: X GiB/sec` result of
    /// `gdsio`; when a capture has both `GPUD` (GPUDirect) and `CPUONLY`
    /// results of the same I/O type, their average throughputs are
    /// compared: GPUDirect below half of the CPU path warns.
    /// The result lines and transfer types are gdsio's (NVIDIA GPUDirect
    /// Storage Benchmarking and Configuration Guide, "GPUDirect Storage
    /// Benchmarking Tools", "gdsio Utility").
    ///
    /// ## Why it matters
    /// GPUDirect Storage exists to move data without the CPU bounce; when it
    /// is much slower than the bounce, the direct path is broken (compat
    /// mode, a far GPU, a misconfigured back end).
    ///
    /// ## How to fix
    /// Check `gdscheck -p` and `/proc/driver/nvidia-fs/stats` during the run,
    /// pick the GPU nearest the storage (`-d`), and use large I/O sizes
    /// (`-i 1M`) with several threads (`-w`).
    ///
    /// ## Example
    ///
    /// The capture `gdsio-slow.txt`, one of the hand-written captures of
    /// `crates/zerohop-validate/tests/judgements.rs`:
    ///
    /// ```text
    /// IoType: READ XferType: GPUD Threads: 1 DataSetSize: 1/1(KiB) IOSize: 1024(KiB) Throughput: 2.0 GiB/sec, Avg_Latency: 1.0 usecs ops: 1 total_time 1 secs
    /// IoType: READ XferType: CPUONLY Threads: 1 DataSetSize: 1/1(KiB) IOSize: 1024(KiB) Throughput: 10.0 GiB/sec, Avg_Latency: 1.0 usecs ops: 1 total_time 1 secs
    /// ```
    ///
    /// `zerohop validate parse gdsio-slow.txt` says:
    ///
    /// ```text
    /// gds
    ///   info           VAL406  gdsio-gpudirect-slow  gdsio-slow.txt READ GPUD: 2.00 GiB/s with 1024 KiB I/Os, 1 thread(s), average latency 1.0 µs
    ///   info           VAL406  gdsio-gpudirect-slow  gdsio-slow.txt READ CPUONLY: 10.00 GiB/s with 1024 KiB I/Os, 1 thread(s), average latency 1.0 µs
    ///   warn           VAL406  gdsio-gpudirect-slow  gdsio-slow.txt READ: GPUDirect 2.00 GiB/s against 10.00 GiB/s through the CPU (20%): the direct path is broken or far
    ///                  gdsio-slow.txt:1 = GPUD
    ///
    /// what to fix first
    ///   1. VAL406 gdsio-gpudirect-slow (gdsio-slow.txt READ): GPUDirect 2.00 GiB/s against 10.00 GiB/s through the CPU (20%): the direct path is broken or far
    ///      fix: check gdscheck -p and nvidia-fs stats during the run, and use the GPU nearest the storage
    ///        /usr/local/cuda/gds/tools/gdscheck -p
    ///        cat /proc/driver/nvidia-fs/stats
    /// ```
    pub static GDSIO_THROUGHPUT = {
        id: "VAL406",
        name: "gdsio-gpudirect-slow",
        group: Gds,
        severity: Warning,
    };
}

declare_judgement! {
    /// Data written and read back by GPUDirect Storage is intact.
    ///
    /// ## What it checks
    /// `Data Verification Success|Failed` of `gdsio_verify` (or `gdsio -V`).
    /// `-V` is gdsio's "verify IO" option (its `-h` usage, gdsio 1.12); the
    /// line is the one `gdsio_verify` prints in the capture
    /// `developer-onizuka/gpudirect_storage/result.txt` (commit 2f23d696).
    ///
    /// ## Why it matters
    /// A failed verification is data corruption on the storage path.
    ///
    /// ## How to fix
    /// Stop using GDS on this host until the cause is found: compare with
    /// `-x 1` (CPU path), check `dmesg` for NVMe, RDMA or `nvidia-fs` errors
    /// and the nvidia-fs error counters.
    ///
    /// ## Example
    ///
    /// The capture `verify.txt`, one of the hand-written captures of
    /// `crates/zerohop-validate/tests/judgements.rs`:
    ///
    /// ```text
    ///    gpu index :0,file :/mnt/test, io_requested :1048576,
    ///    Data Verification Failed
    /// ```
    ///
    /// `zerohop validate parse verify.txt` says:
    ///
    /// ```text
    /// gds
    ///   fail           VAL407  gdsio-verification-failed  verify.txt: data verification failed: data is corrupted on the storage path
    ///                  verify.txt:2 = Data Verification Failed
    ///
    /// what to fix first
    ///   1. VAL407 gdsio-verification-failed (verify.txt): data verification failed: data is corrupted on the storage path
    ///      fix: stop using GDS on this host; compare with the CPU path and read dmesg
    ///        dmesg | grep -iE 'nvidia-fs|nvme|mlx5' | tail -50
    /// ```
    pub static GDSIO_VERIFY = {
        id: "VAL407",
        name: "gdsio-verification-failed",
        group: Gds,
        severity: Error,
    };
}

declare_judgement! {
    /// The nvidia-fs driver counted no errors.
    ///
    /// ## What it checks
    /// The error counters of `/proc/driver/nvidia-fs/stats` (`err=`,
    /// `io_state_err=`, the `Error` line's counters, `pg-cache-fail=`); it
    /// also says whether I/O statistics are on.
    /// The counters are those `nvidia-fs` publishes (NVIDIA GPUDirect Storage
    /// Installation and Troubleshooting Guide, "Displaying GDS NVIDIA FS
    /// Driver Statistics").
    ///
    /// ## Why it matters
    /// Errors there are I/Os that failed on the direct path (DMA mapping,
    /// BAR1 mapping, page cache), which cuFile may have retried through
    /// host memory.
    ///
    /// ## How to fix
    /// Read `dmesg | grep -i nvidia-fs` for the failing operation; turn on
    /// the I/O statistics (`echo 1 > /sys/module/nvidia_fs/parameters/rw_stats_enabled`)
    /// to see which GPU and operation count them.
    ///
    /// ## Example
    ///
    /// The capture `stats.txt`, one of the hand-written captures of
    /// `crates/zerohop-validate/tests/judgements.rs`:
    ///
    /// ```text
    /// GDS Version: 1.14.0.31
    /// NVFS statistics(ver: 4.0)
    /// IO stats: Enabled, peer IO stats: Disabled
    /// Reads                : err=2 io_state_err=0
    /// Bar1-map             : n=1 ok=0 err=1 free=1
    /// ```
    ///
    /// `zerohop validate parse stats.txt` says:
    ///
    /// ```text
    /// gds
    ///   warn           VAL408  nvidia-fs-errors  stats.txt: 2 error counter(s) above zero: Reads err=2, Bar1-map err=1
    ///                  stats.txt:4 = Reads err=2
    ///                  stats.txt:5 = Bar1-map err=1
    ///
    /// what to fix first
    ///   1. VAL408 nvidia-fs-errors (stats.txt): 2 error counter(s) above zero: Reads err=2, Bar1-map err=1
    ///      fix: read the kernel log for the failing operation and turn on the I/O statistics
    ///        dmesg | grep -i nvidia-fs | tail -50
    ///        echo 1 > /sys/module/nvidia_fs/parameters/rw_stats_enabled
    /// ```
    pub static NVFS_ERRORS = {
        id: "VAL408",
        name: "nvidia-fs-errors",
        group: Gds,
        severity: Warning,
    };
}

/// The judgements of `gdscheck -p`.
pub(crate) fn judge_gdscheck(capture: &Capture<'_>, check: &GdsCheck) -> Vec<Finding> {
    let mut findings = Vec::new();
    findings.push(match check.verification {
        Some((line, true)) => GDS_PLATFORM
            .verdict(capture, Status::Pass, "", "platform verification succeeded")
            .at(capture, line, "Platform verification succeeded")
            .done(),
        Some((line, false)) => check
            .platform_errors
            .iter()
            .take(4)
            .fold(
                GDS_PLATFORM
                    .verdict(
                        capture,
                        GDS_PLATFORM.problem(),
                        "",
                        "platform verification did not succeed",
                    )
                    .at(capture, line, "Platform verification"),
                |verdict, (line, text)| verdict.at(capture, *line, text.clone()),
            )
            .fix(
                Remediation::new("read gdscheck's lines above the verdict and check the node")
                    .command("zerohop doctor --only gds"),
            )
            .done(),
        None => GDS_PLATFORM
            .verdict(
                capture,
                Status::Unknown,
                "",
                "no platform verification line: the capture is cut",
            )
            .fix(
                Remediation::new("capture gdscheck's whole output")
                    .command("/usr/local/cuda/gds/tools/gdscheck -p > gdscheck.txt"),
            )
            .done(),
    });
    for gpu in &check.gpus {
        let subject = format!("GPU {}", gpu.index);
        let value = format!(
            "{} bar size {} MiB",
            gpu.name,
            gpu.bar_mib.map_or("?".to_owned(), |b| b.to_string())
        );
        if let Some((has, requires)) = gpu.architecture {
            findings.push(
                GDS_GPU_SUPPORT
                    .verdict(
                        capture,
                        GDS_GPU_SUPPORT.problem(),
                        &subject,
                        format!(
                            "{} has compute capability {has}, GDS requires {requires} or later",
                            gpu.name
                        ),
                    )
                    .at(
                        capture,
                        gpu.line,
                        format!("{} does not have supported architecture", gpu.name),
                    )
                    .fix(Remediation::new(
                        "GDS needs a GPU of compute capability 6.0 (Pascal) or later: move the storage path to such a GPU",
                    )
                    .command("nvidia-smi --query-gpu=name,compute_cap --format=csv"))
                    .done(),
            );
            continue;
        }
        findings.push(if gpu.supported {
            GDS_GPU_SUPPORT
                .verdict(
                    capture,
                    Status::Pass,
                    &subject,
                    format!("{} supports GDS", gpu.name),
                )
                .at(capture, gpu.line, value)
                .done()
        } else {
            GDS_GPU_SUPPORT
                .verdict(
                    capture,
                    GDS_GPU_SUPPORT.problem(),
                    &subject,
                    format!("{} does not support GDS", gpu.name),
                )
                .at(capture, gpu.line, value)
                .fix(
                    Remediation::new(
                        "use a GPU with GDS support and a large BAR1, on the open kernel module",
                    )
                    .command("nvidia-smi -q | grep -A3 -i bar1"),
                )
                .done()
        });
    }
    if let Some((line, enabled)) = check.iommu_enabled {
        findings.push(if enabled {
            GDS_IOMMU
                .verdict(
                    capture,
                    GDS_IOMMU.problem(),
                    "",
                    "the IOMMU is enabled: peer-to-peer DMA into GPU memory fails or is redirected",
                )
                .at(capture, line, "IOMMU: enabled")
                .fix(
                    Remediation::new("boot with iommu=pt (or the IOMMU off)")
                        .command("zerohop doctor --only KRN001"),
                )
                .done()
        } else {
            GDS_IOMMU
                .verdict(capture, Status::Pass, "", "the IOMMU is disabled")
                .at(capture, line, "IOMMU: disabled")
                .done()
        });
    }
    if let Some((line, value)) = check.setting("properties.use_compat_mode") {
        let on = matches!(value, "true" | "1");
        findings.push(if on {
            GDS_COMPAT_MODE
                .verdict(capture, Status::Info, "", "compatibility mode is on: cuFile falls back to POSIX I/O through host memory without an error when the direct path is unavailable")
                .at(capture, line, format!("use_compat_mode {value}"))
                .done()
        } else {
            GDS_COMPAT_MODE
                .verdict(capture, Status::Pass, "", "compatibility mode is off: cuFile fails instead of falling back")
                .at(capture, line, format!("use_compat_mode {value}"))
                .done()
        });
    }
    if let Some(first) = check.backends.first() {
        let names = |supported: bool| {
            check
                .backends
                .iter()
                .filter(|b| b.supported == supported)
                .map(|b| b.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let peer = match check.peer_direct {
            Some((_, true)) => "; peer direct enabled",
            Some((_, false)) => "; peer direct disabled",
            None => "",
        };
        let supported = names(true);
        let mut verdict = GDS_BACKENDS
            .verdict(
                capture,
                Status::Info,
                "",
                format!(
                    "supported: {}{peer}",
                    if supported.is_empty() {
                        "none"
                    } else {
                        supported.as_str()
                    }
                ),
            )
            .at(
                capture,
                first.line,
                format!("unsupported: {}", names(false)),
            );
        if let Some((line, enabled)) = check.peer_direct {
            verdict = verdict.at(
                capture,
                line,
                format!(
                    "peer direct {}",
                    if enabled { "enabled" } else { "disabled" }
                ),
            );
        }
        findings.push(verdict.done());
    }
    findings
}

/// The judgements of a gdsio capture.
pub(crate) fn judge_gdsio(capture: &Capture<'_>, output: &GdsioOutput) -> Vec<Finding> {
    let mut findings = Vec::new();
    if let Some((line, success)) = output.verification {
        findings.push(if success {
            GDSIO_VERIFY
                .verdict(capture, Status::Pass, "", "data verification succeeded")
                .at(capture, line, "Data Verification Success")
                .done()
        } else {
            GDSIO_VERIFY
                .verdict(
                    capture,
                    GDSIO_VERIFY.problem(),
                    "",
                    "data verification failed: data is corrupted on the storage path",
                )
                .at(capture, line, "Data Verification Failed")
                .fix(
                    Remediation::new(
                        "stop using GDS on this host; compare with the CPU path and read dmesg",
                    )
                    .command("dmesg | grep -iE 'nvidia-fs|nvme|mlx5' | tail -50"),
                )
                .done()
        });
    }
    if output.results.is_empty() {
        if let Some((line, version)) = &output.usage {
            findings.push(
                GDSIO_THROUGHPUT
                    .verdict(
                        capture,
                        Status::NotApplicable,
                        "",
                        format!("gdsio's usage text (version {version}): no results"),
                    )
                    .at(capture, *line, format!("gdsio version {version}"))
                    .done(),
            );
        }
        return findings;
    }
    for result in &output.results {
        let subject = format!("{} {}", result.io_type, result.xfer_type);
        let latency = result
            .latency_us
            .map_or(String::new(), |l| format!(", average latency {l:.1} µs"));
        let size = result
            .io_size_kib
            .map_or(String::new(), |s| format!(" with {s} KiB I/Os"));
        let threads = result
            .threads
            .map_or(String::new(), |t| format!(", {t} thread(s)"));
        let mut verdict = GDSIO_THROUGHPUT
            .verdict(
                capture,
                Status::Info,
                &subject,
                format!(
                    "{} GiB/s{size}{threads}{latency}",
                    rate(result.throughput_gib_s)
                ),
            )
            .at(
                capture,
                result.line,
                format!("Throughput {} GiB/sec", result.throughput_gib_s),
            );
        if let Some(command) = &result.command {
            verdict = verdict.evidence("command", command.clone());
        }
        findings.push(verdict.done());
    }
    // GPUDirect against the CPU path, per I/O type.
    let mut io_types: Vec<&str> = output.results.iter().map(|r| r.io_type.as_str()).collect();
    io_types.sort_unstable();
    io_types.dedup();
    for io_type in io_types {
        let average = |xfer: &str| {
            let values: Vec<f64> = output
                .results
                .iter()
                .filter(|r| r.io_type == io_type && r.xfer_type == xfer)
                .map(|r| r.throughput_gib_s)
                .collect();
            (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
        };
        let (Some(direct), Some(cpu)) = (average("GPUD"), average("CPUONLY")) else {
            continue;
        };
        if cpu <= 0.0 {
            continue;
        }
        let ratio = direct / cpu;
        let line = output
            .results
            .iter()
            .find(|r| r.io_type == io_type && r.xfer_type == "GPUD")
            .map_or(0, |r| r.line);
        let text = format!(
            "GPUDirect {} GiB/s against {} GiB/s through the CPU ({})",
            rate(direct),
            rate(cpu),
            percent(ratio)
        );
        findings.push(if ratio >= 0.5 {
            GDSIO_THROUGHPUT
                .verdict(capture, Status::Pass, io_type, text)
                .at(capture, line, "GPUD")
                .done()
        } else {
            GDSIO_THROUGHPUT
                .verdict(capture, GDSIO_THROUGHPUT.problem(), io_type, format!("{text}: the direct path is broken or far"))
                .at(capture, line, "GPUD")
                .fix(Remediation::new("check gdscheck -p and nvidia-fs stats during the run, and use the GPU nearest the storage").command("/usr/local/cuda/gds/tools/gdscheck -p").command("cat /proc/driver/nvidia-fs/stats"))
                .done()
        });
    }
    findings
}

/// The judgement of `/proc/driver/nvidia-fs/stats`.
pub(crate) fn judge_nvfs(capture: &Capture<'_>, stats: &NvfsStats) -> Vec<Finding> {
    let judgement = &NVFS_ERRORS;
    if stats.counters.is_empty() {
        return vec![
            judgement
                .verdict(capture, Status::Unknown, "", "no counters in the capture")
                .fix(
                    Remediation::new("capture the whole file")
                        .command("cat /proc/driver/nvidia-fs/stats > nvfs.txt"),
                )
                .done(),
        ];
    }
    let io_stats = match stats.io_stats {
        Some((_, false)) => "; I/O statistics are off",
        _ => "",
    };
    let errors: Vec<_> = stats
        .counters
        .iter()
        .filter(|c| c.is_error() && c.number().is_some_and(|n| n > 0))
        .collect();
    if errors.is_empty() {
        let checked = stats.counters.iter().filter(|c| c.is_error()).count();
        let mut verdict = judgement.verdict(
            capture,
            Status::Pass,
            "",
            format!("{checked} error counter(s), all zero{io_stats}"),
        );
        if let Some((line, _)) = stats.io_stats {
            verdict = verdict.at(capture, line, "IO stats");
        }
        return vec![verdict.done()];
    }
    let mut verdict = judgement.verdict(
        capture,
        judgement.problem(),
        "",
        format!(
            "{} error counter(s) above zero: {}{io_stats}",
            errors.len(),
            errors
                .iter()
                .take(6)
                .map(|c| format!("{} {}={}", c.section, c.name, c.value))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    );
    for counter in errors.iter().take(6) {
        verdict = verdict.at(
            capture,
            counter.line,
            format!("{} {}={}", counter.section, counter.name, counter.value),
        );
    }
    vec![
        verdict
            .fix(
                Remediation::new(
                    "read the kernel log for the failing operation and turn on the I/O statistics",
                )
                .command("dmesg | grep -i nvidia-fs | tail -50")
                .command("echo 1 > /sys/module/nvidia_fs/parameters/rw_stats_enabled"),
            )
            .done(),
    ]
}
