//! What the kernel, its drivers and the network daemon beside them write
//! when the data path breaks: the message texts the doctor's kernel-log
//! checks recognise, each with the source that prints it.
//!
//! Each function takes one record's message (without its timestamp or
//! syslog header) and says whether it is the signature, and what it names.
//! They never allocate and never panic.

/// Lost carriers of one interface within the window at which Azure's node
/// health checks fail a node for link flapping (fault `NHC2005`):
/// `check_ib_link_flapping`'s default `IB_LINK_FLAP_THRESHOLD=5` in 24
/// hours (Azure/azurehpc-health-checks
/// `customTests/azure_ib_link_flapping.nhc`).
pub const LINK_FLAPS_FAIL: usize = 5;

/// The window of the same check: 24 hours, which the doctor also takes as
/// the default window of every kernel-log check.
pub const DEFAULT_WINDOW_SECS: u64 = 24 * 3600;

/// What an `nvidia-peermem` (or legacy `nv_peer_mem`) message reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Peermem {
    /// The module could not register with (or load against) the RDMA
    /// stack's peer-memory API, so GPUDirect RDMA through it is off.
    Registration,
    /// An error while memory was registered, mapped or freed.
    Runtime,
}

/// One peer-memory module message: which module, and what it reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeermemEvent<'a> {
    /// `nvidia_peermem`, or the legacy `nv_peer_mem`.
    pub module: &'a str,
    /// What it reports.
    pub kind: Peermem,
}

/// The peer-memory modules whose load the kernel's module loader reports
/// under their own name: NVIDIA's `nvidia_peermem` and its predecessor,
/// Mellanox's `nv_peer_mem` (Mellanox/nv_peer_memory).
pub const PEERMEM_MODULES: [&str; 2] = ["nvidia_peermem", "nv_peer_mem"];

/// Classifies a peer-memory module message.
///
/// Every `peer_err()` of `kernel-open/nvidia-peermem/nvidia-peermem.c`
/// (NVIDIA/open-gpu-kernel-modules) prints at `KERN_ERR` as
/// `nvidia-peermem <function>:<line> [ERROR ]<text>`: for instance
/// `nvidia-peermem nv_get_p2p_free_callback:127 ERROR detected invalid
/// context, skipping further processing`. Failures of its `module_init`
/// (`nv_mem_client_init -- error while registering traditional client` or
/// `nc client`, `invalid peerdirect_support param value`) mean it never
/// registered. So do the module loader's refusals of `nvidia_peermem` or
/// of the legacy `nv_peer_mem` built against another RDMA stack
/// (`kernel/module/main.c`: `%s: Unknown symbol %s (err %d)`, newer
/// `Unresolved symbol`, and `%s: disagrees about version of symbol %s`),
/// as Mellanox/nv_peer_memory issue 84 shows: `nv_peer_mem: Unknown
/// symbol ib_register_peer_memory_client (err 0)`.
pub fn peermem(message: &str) -> Option<PeermemEvent<'_>> {
    for module in PEERMEM_MODULES {
        let Some(rest) = message
            .strip_prefix(module)
            .and_then(|rest| rest.strip_prefix(": "))
        else {
            continue;
        };
        let loader = [
            "Unknown symbol ",
            "Unresolved symbol ",
            "disagrees about version of symbol ",
        ];
        return loader
            .iter()
            .any(|refusal| rest.starts_with(refusal))
            .then_some(PeermemEvent {
                module,
                kind: Peermem::Registration,
            });
    }
    let rest = message.strip_prefix("nvidia-peermem ")?;
    let (site, text) = rest.split_once(' ')?;
    let (function, line) = site.rsplit_once(':')?;
    if function.is_empty() || line.is_empty() || !line.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let registration = function == "nv_mem_client_init"
        || text.contains("error while registering")
        || text.contains("support param value");
    Some(PeermemEvent {
        module: "nvidia_peermem",
        kind: if registration {
            Peermem::Registration
        } else {
            Peermem::Runtime
        },
    })
}

/// A network interface's carrier going down or coming up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkChange<'a> {
    /// The interface (`ib6`, `enp59s0f0np0`).
    pub netdev: &'a str,
    /// Whether the link came up (`false`: it went down).
    pub up: bool,
    /// The PCI function when the message names it (mlx5).
    pub pci: Option<&'a str>,
}

/// Classifies a link change of an RDMA NIC's interface.
///
/// mlx5 Ethernet (RoCE) ports: `mlx5e_update_carrier()` in
/// `drivers/net/ethernet/mellanox/mlx5/core/en_main.c` calls
/// `netdev_info(priv->netdev, "Link up\n")` or `"Link down\n"`, which
/// `netdev_printk` prefixes with the driver, the PCI function and the
/// interface: `mlx5_core 0000:3b:00.0 enp59s0f0np0: Link down`.
/// Any interface managed by systemd-networkd: `log_link_info(link,
/// "Lost carrier")` and `"Gained carrier"` in
/// `src/network/networkd-link.c` (`lost carrier` in older releases),
/// written as `ib6: lost carrier` (the corpus capture of Azure's node
/// health checks, `test/data/1dev_6flap_syslog`).
pub fn link_change(message: &str) -> Option<LinkChange<'_>> {
    for (suffix, up) in [(": Link down", false), (": Link up", true)] {
        if let Some(head) = message.strip_suffix(suffix) {
            let mut words = head.split(' ');
            let (Some("mlx5_core"), Some(pci), Some(netdev)) =
                (words.next(), words.next(), words.next())
            else {
                return None;
            };
            return Some(LinkChange {
                netdev,
                up,
                pci: Some(pci),
            });
        }
    }
    let (netdev, event) = message.split_once(": ")?;
    if netdev.is_empty() || netdev.contains(' ') {
        return None;
    }
    let up = if event.eq_ignore_ascii_case("lost carrier") {
        false
    } else if event.eq_ignore_ascii_case("gained carrier") {
        true
    } else {
        return None;
    };
    Some(LinkChange {
        netdev,
        up,
        pci: None,
    })
}

/// Whether an interface name is IP over InfiniBand's (`ib0`, `ibp59s0`,
/// `ibP257p1s0`): the names Azure's flap check counts
/// (`match($0, /ib[0-9a-zA-Z_]+/)`).
pub fn is_ipoib_name(netdev: &str) -> bool {
    netdev.strip_prefix("ib").is_some_and(|rest| {
        !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
    })
}

/// What the RPC client said about a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerState {
    /// A hard mount retries: `not responding, still trying`.
    StillTrying,
    /// A soft mount gave up and returned an error: `not responding, timed out`.
    TimedOut,
    /// The server answered again after not responding.
    Ok,
}

/// One NFS (or lockd) server liveness message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerEvent<'a> {
    /// The RPC program: `nfs` or `lockd`.
    pub program: &'a str,
    /// The server as mounted (host name or address).
    pub server: &'a str,
    /// What happened.
    pub state: ServerState,
}

/// The RPC programs whose silence stalls file I/O on a mount.
const NFS_PROGRAMS: [&str; 2] = ["nfs", "lockd"];

/// Classifies an NFS server liveness message.
///
/// `call_timeout()` and `call_decode()` of `net/sunrpc/clnt.c` print
/// `%s: server %s not responding, still trying`, `… not responding, timed
/// out` and `%s: server %s OK`, with the RPC program's name (`nfs`,
/// `lockd`) and the server's name.
pub fn nfs_server(message: &str) -> Option<ServerEvent<'_>> {
    let (program, rest) = message.split_once(": server ")?;
    if !NFS_PROGRAMS.contains(&program) {
        return None;
    }
    let (server, state) = rest.split_once(' ')?;
    let state = match state {
        "not responding, still trying" => ServerState::StillTrying,
        "not responding, timed out" => ServerState::TimedOut,
        "OK" => ServerState::Ok,
        _ => return None,
    };
    (!server.is_empty()).then_some(ServerEvent {
        program,
        server,
        state,
    })
}

/// What an `nvidia-fs` message is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NvidiaFs {
    /// A message of the running driver; its level tells an error from
    /// information.
    Driver,
    /// The module failed to set itself up.
    InitFailure,
}

/// Classifies an `nvidia-fs` (GPUDirect Storage) message.
///
/// NVIDIA/gds-nvidia-fs `src/nvfs-core.h`: `nvfs_msg()` prints
/// `DEVICE_NAME ":" FMT` (`nvidia-fs:…`) at `KERN_ERR` for `nvfs_err`,
/// `KERN_WARNING` for `nvfs_warn`, and `KERN_INFO` for `nvfs_info`, which
/// is on by default (`nvfs_info_enabled = 1` in `src/nvfs-core.c`), so the
/// level is what tells an error. `nvfs_init()` reports its own failures
/// with `pr_err("nvidia_fs: failed to register a major number\n")`,
/// `Failed to register device class` and `Failed to create the device`.
pub fn nvidia_fs(message: &str) -> Option<NvidiaFs> {
    if message.starts_with("nvidia-fs:") {
        return Some(NvidiaFs::Driver);
    }
    let rest = message.strip_prefix("nvidia_fs: ")?;
    (rest.starts_with("failed") || rest.starts_with("Failed")).then_some(NvidiaFs::InitFailure)
}

/// The severity of a PCIe AER error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum AerSeverity {
    /// Corrected by the link (retried): a marginal link when frequent.
    Corrected,
    /// Uncorrectable, the link still up: a transaction was lost.
    NonFatal,
    /// Uncorrectable and fatal: the link is reset, the device may be lost.
    Fatal,
}

/// One PCIe AER error report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AerError<'a> {
    /// The reporting PCI function (`0000:00:03.0`), when the line names it.
    pub device: Option<&'a str>,
    /// Its severity.
    pub severity: AerSeverity,
}

/// Classifies a PCIe AER error report.
///
/// `aer_print_error()` in `drivers/pci/pcie/aer.c` prints `PCIe Bus Error:
/// severity=%s, type=%s, (%s)` through `pci_printk`, prefixed with the
/// driver and the function (`pcieport 0000:00:03.0: AER: PCIe Bus Error:
/// …`). The severities are `aer_error_severity_string[]`: `Uncorrected
/// (Non-Fatal)`, `Uncorrected (Fatal)`, `Corrected`, renamed
/// `Uncorrectable (Non-Fatal)`, `Uncorrectable (Fatal)`, `Correctable` by a
/// 2023 patch; both spellings are read.
pub fn aer(message: &str) -> Option<AerError<'_>> {
    let (head, rest) = message.split_once("PCIe Bus Error: severity=")?;
    let severity = rest.split(',').next().unwrap_or("");
    let severity = if severity.starts_with("Uncorrect") {
        if severity.ends_with("(Fatal)") {
            AerSeverity::Fatal
        } else {
            AerSeverity::NonFatal
        }
    } else if severity.starts_with("Correct") {
        AerSeverity::Corrected
    } else {
        return None;
    };
    let device = head
        .split([' ', '\t'])
        .map(|word| word.trim_end_matches(':'))
        .find(|word| is_pci_address(word));
    Some(AerError { device, severity })
}

/// Whether `word` is a PCI function address `dddd:bb:dd.f` (hex digits).
fn is_pci_address(word: &str) -> bool {
    let bytes = word.as_bytes();
    let hex = |range: std::ops::Range<usize>| bytes[range].iter().all(u8::is_ascii_hexdigit);
    bytes.len() == 12
        && bytes[4] == b':'
        && bytes[7] == b':'
        && bytes[10] == b'.'
        && hex(0..4)
        && hex(5..7)
        && hex(8..10)
        && hex(11..12)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peermem_errors_and_registration_failures() {
        assert_eq!(
            peermem(
                "nvidia-peermem nv_get_p2p_free_callback:127 ERROR detected invalid context, skipping further processing"
            )
            .map(|e| e.kind),
            Some(Peermem::Runtime)
        );
        assert_eq!(
            peermem(
                "nvidia-peermem nv_mem_client_init:512 ERROR nv_mem_client_init -- error while registering nc client"
            )
            .map(|e| e.kind),
            Some(Peermem::Registration)
        );
        assert_eq!(
            peermem("nvidia_peermem: Unknown symbol ib_register_peer_memory_client (err -2)"),
            Some(PeermemEvent {
                module: "nvidia_peermem",
                kind: Peermem::Registration
            })
        );
        assert_eq!(
            peermem("nvidia_peermem: disagrees about version of symbol ib_umem_get")
                .map(|e| e.kind),
            Some(Peermem::Registration)
        );
        // The legacy module's load failure (Mellanox/nv_peer_memory issue 84).
        assert_eq!(
            peermem("nv_peer_mem: Unknown symbol ib_register_peer_memory_client (err 0)"),
            Some(PeermemEvent {
                module: "nv_peer_mem",
                kind: Peermem::Registration
            })
        );
        assert_eq!(peermem("nv_peer_mem: module loaded"), None);
        assert_eq!(peermem("nvidia-peermem loaded"), None);
        assert_eq!(peermem("nvidia-peermem x:y z"), None);
        assert_eq!(peermem("nvidia_peermem: module verification failed"), None);
    }

    #[test]
    fn link_changes_of_mlx5_and_networkd() {
        assert_eq!(
            link_change("mlx5_core 0000:3b:00.0 enp59s0f0np0: Link down"),
            Some(LinkChange {
                netdev: "enp59s0f0np0",
                up: false,
                pci: Some("0000:3b:00.0")
            })
        );
        assert_eq!(
            link_change("ib6: Gained carrier").map(|c| (c.netdev, c.up)),
            Some(("ib6", true))
        );
        assert_eq!(link_change("ib6: lost carrier").map(|c| c.up), Some(false));
        assert_eq!(link_change("e1000e 0000:00:19.0 eth0: Link down"), None);
        assert_eq!(link_change("eth0 x: lost carrier"), None);
        assert!(is_ipoib_name("ib6") && is_ipoib_name("ibP257p1s0"));
        assert!(!is_ipoib_name("ib") && !is_ipoib_name("eth0") && !is_ipoib_name("ib-0"));
    }

    #[test]
    fn nfs_server_states() {
        assert_eq!(
            nfs_server("nfs: server filer-1 not responding, still trying"),
            Some(ServerEvent {
                program: "nfs",
                server: "filer-1",
                state: ServerState::StillTrying
            })
        );
        assert_eq!(
            nfs_server("lockd: server 10.0.0.5 not responding, timed out").map(|e| e.state),
            Some(ServerState::TimedOut)
        );
        assert_eq!(
            nfs_server("nfs: server filer-1 OK").map(|e| e.state),
            Some(ServerState::Ok)
        );
        assert_eq!(nfs_server("rpcbind: server x OK"), None);
        assert_eq!(nfs_server("nfs: server filer-1 is slow"), None);
    }

    #[test]
    fn nvidia_fs_messages() {
        assert_eq!(
            nvidia_fs("nvidia-fs:nvfs_io_init:1610 offset = 3 size = 7 not sector aligned"),
            Some(NvidiaFs::Driver)
        );
        assert_eq!(
            nvidia_fs("nvidia_fs: failed to register a major number"),
            Some(NvidiaFs::InitFailure)
        );
        assert_eq!(
            nvidia_fs("nvidia_fs: Initializing nvfs driver module"),
            None
        );
    }

    #[test]
    fn aer_severities_in_both_spellings() {
        let fatal = aer(
            "pcieport 0000:00:03.0: AER: PCIe Bus Error: severity=Uncorrected (Fatal), type=Transaction Layer, (Receiver ID)",
        )
        .unwrap();
        assert_eq!(fatal.severity, AerSeverity::Fatal);
        assert_eq!(fatal.device, Some("0000:00:03.0"));
        assert_eq!(
            aer("mlx5_core 0000:3b:00.0: PCIe Bus Error: severity=Uncorrectable (Non-Fatal), type=Transaction Layer, (Requester ID)")
                .map(|e| e.severity),
            Some(AerSeverity::NonFatal)
        );
        assert_eq!(
            aer("PCIe Bus Error: severity=Correctable, type=Physical Layer, (Receiver ID)"),
            Some(AerError {
                device: None,
                severity: AerSeverity::Corrected
            })
        );
        assert_eq!(aer("PCIe Bus Error: severity=Bogus"), None);
    }
}
