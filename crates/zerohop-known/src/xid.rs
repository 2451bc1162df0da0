//! NVIDIA GPU faults as the driver reports them in the kernel log (`Xid`
//! events), and what each asks of the operator.
//!
//! The driver prints every fault it detects as `NVRM: Xid (PCI:<domain>:
//! <bus>:<device>): <number>, pid=<pid>, name=<process>, <details>`, on a
//! MIG GPU with ` GPU-I:<n>` (and ` GPU-CI:<n>`) after the address
//! (`krcReportXid_IMPL()` in NVIDIA/open-gpu-kernel-modules
//! `src/nvidia/src/kernel/gpu/rc/kernel_rc.c`; older drivers write the
//! address without `PCI:`). The
//! catalog below is NVIDIA's "Xid Catalog"
//! (<https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html>,
//! the r590 driver's edition), its name and its *immediate resolution*
//! per number, as also transcribed by Lepton AI's GPUd
//! (leptonai/gpud `components/accelerator/nvidia/xid/catalog_generated.go`
//! at 73e270e3e0fd490ec5c33e144ad894de7d6c4d21), whose node-health
//! verdicts follow the same column. Left out are the numbers the catalog
//! marks "Unused", Xid 78 (a vGPU host's), and 162–170, which the catalog
//! lists without a resolution: a log that names one is reported as not in
//! the catalog.

/// What the catalog's *immediate resolution* asks for, from the least to
/// the most disruptive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum XidAction {
    /// `IGNORE`: information, or a consequence of another Xid reported
    /// beside it.
    Ignore,
    /// `RESTART_APP`: the application's work on the GPU was torn down;
    /// the GPU keeps working once the application restarts.
    RestartApp,
    /// `RESET_GPU` (and the memory-error and NVLink workflows that end in
    /// one): the GPU is unusable until it is reset; drain its jobs first.
    ResetGpu,
    /// `CHECK_MECHANICALS`: the board's power or seating is at fault.
    InspectHardware,
    /// `RESTART_BM` / `RESTART_VM`: only a reboot of the node brings the
    /// GPU back (it fell off the bus).
    RebootNode,
}

impl XidAction {
    /// What to do, as a lowercase fragment.
    pub fn says(self) -> &'static str {
        match self {
            XidAction::Ignore => "no action",
            XidAction::RestartApp => "restart the application",
            XidAction::ResetGpu => "reset the gpu",
            XidAction::InspectHardware => "inspect the board's power and seating",
            XidAction::RebootNode => "reboot the node",
        }
    }

    /// Whether the GPU is out of service until someone acts: its jobs
    /// must be drained.
    pub fn needs_drain(self) -> bool {
        self >= XidAction::ResetGpu
    }
}

/// One catalog entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct XidEntry {
    /// The Xid number.
    pub code: u32,
    /// The catalog's description, lowercase.
    pub name: &'static str,
    /// Its immediate resolution.
    pub action: XidAction,
}

const fn entry(code: u32, name: &'static str, action: XidAction) -> XidEntry {
    XidEntry { code, name, action }
}

use XidAction::{Ignore, InspectHardware, RebootNode, ResetGpu, RestartApp};

/// The catalog's numbers in use, sorted by number. Xid 48 (`WORKFLOW_XID_48`)
/// and 74 (`WORKFLOW_NVLINK_ERR`) are workflows whose first step, for a
/// GPU in service, is a reset (NVIDIA's GPU memory error management and
/// NVLink troubleshooting guides); 45 (`WORKFLOW_XID_45`) follows another
/// Xid that decides; 144–150 (`WORKFLOW_NVLINK5_ERR`) and 154 are decided
/// by their text ([`action_of`]).
pub const CATALOG: &[XidEntry] = &[
    entry(8, "gpu stopped processing", RestartApp),
    entry(11, "invalid or corrupted push buffer stream", RestartApp),
    entry(13, "graphics engine exception", RestartApp),
    entry(25, "invalid or illegal push buffer stream", RestartApp),
    entry(31, "gpu memory page fault", RestartApp),
    entry(32, "invalid or corrupted push buffer stream", RestartApp),
    entry(37, "driver firmware error", Ignore),
    entry(38, "driver firmware error", Ignore),
    entry(39, "copy engine exception", RestartApp),
    entry(40, "copy engine exception", RestartApp),
    entry(41, "copy engine exception", RestartApp),
    entry(43, "gpu stopped processing", Ignore),
    entry(44, "graphics engine fault during context switch", Ignore),
    entry(45, "preemptive cleanup, due to previous errors", Ignore),
    entry(46, "gpu stopped processing", ResetGpu),
    entry(48, "double bit ecc error", ResetGpu),
    entry(
        54,
        "auxiliary power is not connected to the gpu board",
        InspectHardware,
    ),
    entry(60, "video processor exception", RestartApp),
    entry(62, "internal micro-controller halt", ResetGpu),
    entry(63, "gpu memory remapping event", Ignore),
    entry(64, "gpu memory remapping failure", ResetGpu),
    entry(66, "illegal access by driver", Ignore),
    entry(67, "illegal access by driver", Ignore),
    entry(68, "nvdec0 exception", RestartApp),
    entry(69, "graphics engine class error", RestartApp),
    entry(70, "ce3: unknown error", RestartApp),
    entry(71, "ce4: unknown error", RestartApp),
    entry(72, "ce5: unknown error", RestartApp),
    entry(74, "nvlink error", ResetGpu),
    entry(75, "ce6: unknown error", RestartApp),
    entry(76, "ce7: unknown error", RestartApp),
    entry(77, "ce8: unknown error", RestartApp),
    entry(79, "gpu has fallen off the bus", RebootNode),
    entry(80, "corrupted data sent to gpu", RestartApp),
    entry(82, "nvjpg0 error", RestartApp),
    entry(83, "nvdec1 error", RestartApp),
    entry(84, "nvdec2 error", RestartApp),
    entry(85, "ce9: unknown error", RestartApp),
    entry(86, "ofa exception", RestartApp),
    entry(88, "nvdec3 error", RestartApp),
    entry(89, "nvdec4 error", RestartApp),
    entry(92, "high single-bit ecc error rate", Ignore),
    entry(
        93,
        "non-fatal violation of provisioned inforom wear limit",
        Ignore,
    ),
    entry(94, "contained memory error", RestartApp),
    entry(95, "uncontained memory error", ResetGpu),
    entry(96, "nvdec5 error", RestartApp),
    entry(97, "nvdec6 error", RestartApp),
    entry(98, "nvdec7 error", RestartApp),
    entry(99, "nvjpg1 error", RestartApp),
    entry(100, "nvjpg2 error", RestartApp),
    entry(101, "nvjpg3 error", RestartApp),
    entry(102, "nvjpg4 error", RestartApp),
    entry(103, "nvjpg5 error", RestartApp),
    entry(104, "nvjpg6 error", RestartApp),
    entry(105, "nvjpg7 error", RestartApp),
    entry(106, "smbpbi test message", Ignore),
    entry(107, "smbpbi test message silent", Ignore),
    entry(109, "context switch timeout error", ResetGpu),
    entry(110, "security fault error", ResetGpu),
    entry(119, "gsp rpc timeout", ResetGpu),
    entry(120, "gsp error", ResetGpu),
    entry(121, "c2c error", Ignore),
    entry(126, "ce10: unknown error", RestartApp),
    entry(127, "ce11: unknown error", RestartApp),
    entry(128, "ce12: unknown error", RestartApp),
    entry(129, "ce13: unknown error", RestartApp),
    entry(130, "ce14: unknown error", RestartApp),
    entry(131, "ce15: unknown error", RestartApp),
    entry(132, "ce16: unknown error", RestartApp),
    entry(133, "ce17: unknown error", RestartApp),
    entry(134, "ce18: unknown error", RestartApp),
    entry(135, "ce19: unknown error", RestartApp),
    entry(136, "link training failed", ResetGpu),
    entry(137, "nvlink privilege error", Ignore),
    entry(139, "ofa1 error", RestartApp),
    entry(140, "ecc unrecovered error", ResetGpu),
    entry(141, "cuda fast path error", Ignore),
    entry(143, "gpu initialization error", ResetGpu),
    entry(144, "nvlink: saw error", ResetGpu),
    entry(145, "nvlink: rlw error", ResetGpu),
    entry(146, "nvlink: tlw error", ResetGpu),
    entry(147, "nvlink: trex error", ResetGpu),
    entry(148, "nvlink: nvlpw_ctrl error", ResetGpu),
    entry(149, "nvlink: netir error", ResetGpu),
    entry(150, "nvlink: mse error", ResetGpu),
    entry(151, "key rotation error", RebootNode),
    entry(152, "dla smmu error", Ignore),
    entry(153, "dla timeout error", Ignore),
    entry(154, "gpu recovery action changed", Ignore),
    entry(155, "nvlink: sw defined error", ResetGpu),
    entry(156, "resource retirement event", ResetGpu),
    entry(157, "resource retirement failure", Ignore),
    entry(158, "gpu fatal timeout", ResetGpu),
    entry(159, "chi non-data error", RestartApp),
    entry(160, "channel retirement event", Ignore),
    entry(161, "channel retirement failure", Ignore),
    entry(171, "uncorrectable dram error", ResetGpu),
    entry(172, "uncorrectable sram error", ResetGpu),
];

/// The catalog entry of Xid `code`, if the catalog has it in use.
pub fn lookup(code: u32) -> Option<&'static XidEntry> {
    CATALOG
        .binary_search_by_key(&code, |e| e.code)
        .ok()
        .map(|i| &CATALOG[i])
}

/// One `Xid` record of the kernel log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct XidEvent<'a> {
    /// The GPU as the driver names it: `<domain>:<bus>:<device>`
    /// (`0000:cb:00`), without the function.
    pub gpu: &'a str,
    /// The Xid number.
    pub code: u32,
    /// The details after the number.
    pub text: &'a str,
}

impl XidEvent<'_> {
    /// Whether PCI function `address` (`0000:cb:00.0`) is the GPU this
    /// event names: the driver writes the function's domain, bus and
    /// device without the function number.
    pub fn names(&self, address: &str) -> bool {
        address
            .get(..self.gpu.len())
            .is_some_and(|head| head.eq_ignore_ascii_case(self.gpu))
            && address[self.gpu.len()..].starts_with('.')
    }
}

/// Reads an `Xid` record: `NVRM: Xid (PCI:0000:cb:00): 109, pid=1797828,
/// …` (or `NVRM: Xid (0000:cb:00): 109, …` from older drivers).
pub fn parse(message: &str) -> Option<XidEvent<'_>> {
    let rest = message.strip_prefix("NVRM: Xid (")?;
    let (gpu, rest) = rest.split_once("): ")?;
    let gpu = gpu.strip_prefix("PCI:").unwrap_or(gpu);
    // A MIG instance follows the address: `0000:cb:00 GPU-I:01 GPU-CI:00`.
    let gpu = gpu.split(' ').next().unwrap_or(gpu);
    if !is_gpu_address(gpu) {
        return None;
    }
    let (code, text) = rest.split_once(',').unwrap_or((rest, ""));
    let code = code.trim().parse().ok()?;
    Some(XidEvent {
        gpu,
        code,
        text: text.trim(),
    })
}

/// What an event asks for: the catalog's action, except where the
/// catalog says the event's own text decides. NVLink5 errors (144–150)
/// name their severity (`… Nonfatal XC0 …` or `… Fatal XC0 …`, leptonai/gpud
/// pull request 1174): a non-fatal one needs no reset. Xid 154 names the
/// recovery the driver now asks for (`GPU recovery action changed from
/// 0x0 (None) to 0x1 (GPU Reset Required)`). `None` for a number the
/// catalog does not have in use.
pub fn action_of(event: &XidEvent<'_>) -> Option<XidAction> {
    let entry = lookup(event.code)?;
    Some(match event.code {
        144..=150 if has_word(event.text, "Nonfatal") || has_word(event.text, "Non-fatal") => {
            Ignore
        }
        154 => {
            let now = event.text.rsplit_once(" to ").map_or("", |(_, to)| to);
            if now.contains("Reboot") {
                RebootNode
            } else if now.contains("Reset") || now.contains("Drain") {
                ResetGpu
            } else {
                Ignore
            }
        }
        _ => entry.action,
    })
}

fn has_word(text: &str, word: &str) -> bool {
    text.split([' ', ',']).any(|w| w.eq_ignore_ascii_case(word))
}

/// Whether `text` is `dddd:bb:dd` in hex digits.
fn is_gpu_address(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.len() == 10
        && bytes[4] == b':'
        && bytes[7] == b':'
        && bytes
            .iter()
            .enumerate()
            .all(|(i, b)| i == 4 || i == 7 || b.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_catalog_is_sorted_and_unique() {
        assert!(CATALOG.windows(2).all(|w| w[0].code < w[1].code));
        assert!(CATALOG.iter().all(|e| e.name == e.name.to_lowercase()));
    }

    #[test]
    fn xid_lines_of_both_address_forms() {
        let event = parse(
            "NVRM: Xid (PCI:0000:cb:00): 109, pid=1797828, name=pt_main_thread, Ch 00000008, errorString CTX SWITCH TIMEOUT, Info 0x58005",
        )
        .unwrap();
        assert_eq!(event.gpu, "0000:cb:00");
        assert_eq!(event.code, 109);
        assert!(event.text.starts_with("pid=1797828"));
        assert!(event.names("0000:CB:00.0") && !event.names("0000:cb:001.0"));
        assert!(!event.names("0000:cb:0"));
        assert_eq!(action_of(&event), Some(ResetGpu));
        let old = parse("NVRM: Xid (0000:01:00): 79, GPU has fallen off the bus.").unwrap();
        assert_eq!(action_of(&old), Some(RebootNode));
        assert_eq!(
            parse("NVRM: Xid (PCI:0000:01:00): 999, x").map(|e| e.code),
            Some(999)
        );
        assert_eq!(
            action_of(&parse("NVRM: Xid (PCI:0000:01:00): 999, x").unwrap()),
            None
        );
        assert_eq!(parse("NVRM: Xid (PCI:zz:01:00): 79, x"), None);
        assert_eq!(parse("NVRM: Xid (PCI:0000:01:00): x, y"), None);
        assert_eq!(parse("NVRM: GPU at PCI:0000:01:00: GPU-34d7"), None);
        let mig =
            parse("NVRM: Xid (PCI:0000:01:00 GPU-I:01 GPU-CI:00): 31, pid=7, name=p, x").unwrap();
        assert_eq!((mig.gpu, mig.code), ("0000:01:00", 31));
    }

    #[test]
    fn nvlink5_and_recovery_actions_read_their_text() {
        // leptonai/gpud pull request 1174's kmsg inputs.
        let fatal = parse("NVRM: Xid (PCI:0019:01:00): 149, NETIR Fatal XC0 i0 Link -1 (0x000fe406 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)").unwrap();
        assert_eq!(action_of(&fatal), Some(ResetGpu));
        let nonfatal = parse("NVRM: Xid (PCI:0018:01:00): 145, RLW_RXPIPE Nonfatal XC0 i0 Link 13 (0x0409a0c2 0x00000008 0x00000001 0x00000000 0x00100000 0x00000004)").unwrap();
        assert_eq!(action_of(&nonfatal), Some(Ignore));
        let reboot = parse("NVRM: Xid (PCI:0000:9c:00): 154, GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)").unwrap();
        assert_eq!(action_of(&reboot), Some(RebootNode));
        let back = parse("NVRM: Xid (PCI:0000:9c:00): 154, GPU recovery action changed from 0x1 (GPU Reset Required) to 0x0 (None)").unwrap();
        assert_eq!(action_of(&back), Some(Ignore));
    }
}
