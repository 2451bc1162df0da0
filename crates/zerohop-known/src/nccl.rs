//! NCCL's environment variables zerohop writes advice for, and the defaults
//! NCCL applies without them.

/// Selects the RDMA devices (and ports) NCCL uses: `=mlx5_0:1,mlx5_3:1`.
/// A leading `=` matches names exactly; without it `mlx5_1` also selects
/// `mlx5_10` (NCCL's `env.rst`, `NCCL_IB_HCA`).
pub const IB_HCA: &str = "NCCL_IB_HCA";

/// The farthest GPU–NIC distance class over which NCCL still uses
/// GPUDirect RDMA: `PIX`, `PXB`, `PHB` or `SYS` (also `LOC`, `NVL`, …).
pub const NET_GDR_LEVEL: &str = "NCCL_NET_GDR_LEVEL";

/// [`NET_GDR_LEVEL`] when unset, on PCIe hosts: `PXB`. NVIDIA/nccl
/// `src/graph/paths.cc`, `ncclTopoCheckGdr`: `netGdrLevel` starts at
/// `PATH_PXB` (recent releases start at `PATH_P2C` when `NCCL_NET_GDR_C2C`
/// is on: a class only GPUs attached to the CPU over NVLink-C2C reach, and
/// which sits between `PXB` and `PHB` in `src/graph/topo.h`), and a GPU–NIC path farther than
/// it logs "GPU Direct RDMA Disabled" and stages through host memory.
/// NCCL has no `NODE` class: a path between two host bridges of one CPU
/// goes through the CPU node and is `PHB` to NCCL.
pub const NET_GDR_LEVEL_DEFAULT: &str = "PXB";

/// The distance classes the legacy numbers of [`NET_GDR_LEVEL`] (and
/// `NCCL_P2P_LEVEL`) stand for, by number; a number past the end is `SYS`.
/// NVIDIA/nccl `src/graph/paths.cc`, `ncclGetLevel`: a value that starts
/// with a digit is read with `strtol(str, NULL, 0)` (so `0x3` is 3 and `010`
/// is 8) and mapped through `levelsOldToNew` = `{ PATH_LOC, PATH_PIX,
/// PATH_PXB, PATH_PHB, PATH_SYS, PATH_SYS }`. NCCL's environment
/// documentation (`env.rst`, "Integer Values (Legacy)") calls the numbers
/// discouraged: the path classes change between releases (`NVL`, `NVB`,
/// `C2C`, `P2C`, `PXN` came later) while the numbers keep the old five, so
/// the same number means different things to readers of different releases.
pub const LEGACY_LEVELS: &[&str] = &["LOC", "PIX", "PXB", "PHB", "SYS"];

/// The class NCCL reads a level value as when it is a legacy number (starts
/// with a digit), per [`LEGACY_LEVELS`]; `None` for a class name or
/// anything else.
pub fn legacy_level(value: &str) -> Option<&'static str> {
    let value = value.trim_start();
    if !value.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    // strtol with base 0: 0x hex, leading-0 octal, else decimal; it stops at
    // the first character that is not a digit of the base.
    let (digits, radix) = if let Some(hex) = value
        .strip_prefix("0x")
        .or_else(|| value.strip_prefix("0X"))
        .filter(|hex| hex.starts_with(|c: char| c.is_ascii_hexdigit()))
    {
        (hex, 16)
    } else if value.len() > 1 && value.starts_with('0') {
        (&value[1..], 8)
    } else {
        (value, 10)
    };
    let end = digits
        .find(|c: char| !c.is_digit(radix))
        .unwrap_or(digits.len());
    let number =
        u64::from_str_radix(&digits[..end], radix).unwrap_or(if end == 0 { 0 } else { u64::MAX });
    let last = LEGACY_LEVELS.len() - 1;
    let index = usize::try_from(number).map_or(last, |n| n.min(last));
    LEGACY_LEVELS.get(index).copied()
}

/// NCCL's path classes up to `SYS`, nearest first, as `NCCL_NET_GDR_LEVEL`
/// names them: NVIDIA/nccl `src/graph/topo.cc` at
/// 5067397c2676d5aed50042fc39e5c8ee96eb0027 (`topoPathTypeStr`), which
/// `ncclGetLevel` (`src/graph/paths.cc`) compares with `strcmp`, so case
/// matters; a value that is neither a class nor a number is ignored.
pub const PATH_CLASSES: [&str; 10] = [
    "LOC", "NVL", "NVB", "C2C", "PIX", "PXB", "P2C", "PXN", "PHB", "SYS",
];

/// The rank in [`PATH_CLASSES`] of a level value as NCCL reads it (a class
/// name or a legacy number); `None` when NCCL ignores the value.
pub fn level_rank(value: &str) -> Option<usize> {
    let name = PATH_CLASSES
        .iter()
        .find(|class| **class == value)
        .copied()
        .or_else(|| legacy_level(value))?;
    PATH_CLASSES.iter().position(|class| *class == name)
}

/// The RoCE GID index NCCL uses; unset (`-1`) NCCL picks one
/// (NVIDIA/nccl `src/transport/net_ib/connect.cc` at
/// 5067397c2676d5aed50042fc39e5c8ee96eb0027, `ncclIbGetGidIndex`).
pub const IB_GID_INDEX: &str = "NCCL_IB_GID_INDEX";

/// The address family of the GID NCCL picks: `AF_INET` (the default) or
/// `AF_INET6` (`envIbAddrFamily`, same file).
pub const IB_ADDR_FAMILY: &str = "NCCL_IB_ADDR_FAMILY";

/// The RoCE version of the GID NCCL picks, 2 unless set
/// (`NCCL_PARAM(IbRoceVersionNum, "IB_ROCE_VERSION_NUM", 2)`, same file).
pub const IB_ROCE_VERSION_NUM: &str = "NCCL_IB_ROCE_VERSION_NUM";

/// The traffic class (IPv4 ToS byte) of NCCL's RoCE packets; unset
/// (`-1`), NCCL sends with `NCCL_IB_TC_DEFAULT`, 0 (same file).
pub const IB_TC: &str = "NCCL_IB_TC";

/// Disables NCCL's InfiniBand/RoCE transport when non-zero
/// (`src/transport/net_ib/init.cc`: `NCCL_PARAM(IbDisable, "IB_DISABLE", 0)`,
/// and `ncclIbInit` returns an error while it is set): NCCL falls back to
/// sockets.
pub const IB_DISABLE: &str = "NCCL_IB_DISABLE";

/// Names the network NCCL must use (`IB`, `Socket` or a plugin's name),
/// matched case-insensitively against each network's name
/// (`src/plugin/net.cc`, `strcasecmp(comm->config.netName, …->name)`).
pub const NET: &str = "NCCL_NET";

/// The name of NCCL's built-in verbs network (`src/transport/net_ib/common.cc`).
pub const NET_IB: &str = "IB";

/// The name of NCCL's socket network (`src/transport/net_socket.cc`).
pub const NET_SOCKET: &str = "Socket";

/// The interfaces NCCL's bootstrap and socket transport use.
pub const SOCKET_IFNAME: &str = "NCCL_SOCKET_IFNAME";

/// The bytes of one shared-memory (SHM transport) connection's buffers
/// at NCCL's defaults, one per protocol: LL `NCCL_LL_LINES_PER_THREAD *
/// NCCL_LL_MAX_NTHREADS * NCCL_STEPS * 16` (8·512·8·16 = 524 288), LL128
/// `NCCL_LL128_ELEMS_PER_THREAD * NCCL_LL128_MAX_NTHREADS * NCCL_STEPS * 8`
/// (120·640·8·8 = 4 915 200) and Simple `DEFAULT_BUFFSIZE` (4 MiB):
/// `src/init.cc` and `src/include/device.h` at
/// 5067397c2676d5aed50042fc39e5c8ee96eb0027. NCCL allocates each in
/// `/dev/shm/nccl-*`.
pub const SHM_CONNECTION_BYTES: u64 = 524_288 + 4_915_200 + (4 << 20);

/// The `/dev/shm` NCCL's troubleshooting guide asks of a container
/// (`docs/userguide/source/troubleshooting/runtime_and_mpi_issues.rst`:
/// `--shm-size=1g --ulimit memlock=-1`).
pub const SHM_RECOMMENDED_BYTES: u64 = 1 << 30;

/// One entry of a device or interface list as NCCL reads `NCCL_IB_HCA` and
/// `NCCL_SOCKET_IFNAME`: a name prefix (the whole name under `=`) and,
/// for devices, a port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListEntry {
    /// The name, or its prefix.
    pub name: String,
    /// The port, when given (`mlx5_0:1`).
    pub port: Option<u32>,
}

/// A device or interface list: `^` excludes what it names, `=` matches
/// names exactly, else each entry is a prefix (NVIDIA/nccl
/// `src/misc/utils.cc` at 5067397c2676d5aed50042fc39e5c8ee96eb0027,
/// `parseStringList` and `matchIf`: entries split at `,`, the port after
/// `:`, empty entries dropped).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SelectList {
    /// Whether the list names what to leave out.
    pub exclude: bool,
    /// Whether names match exactly.
    pub exact: bool,
    /// The entries.
    pub entries: Vec<ListEntry>,
}

impl SelectList {
    /// Reads a list as NCCL does. A port that is not a number reads as
    /// `atoi` reads it: its leading digits, else 0.
    pub fn parse(value: &str) -> SelectList {
        let (exclude, rest) = match value.strip_prefix('^') {
            Some(rest) => (true, rest),
            None => (false, value),
        };
        let (exact, rest) = match rest.strip_prefix('=') {
            Some(rest) => (true, rest),
            None => (false, rest),
        };
        let entries = rest
            .split(',')
            .filter_map(|entry| {
                let mut parts = entry.split(':');
                let name = parts.next().filter(|name| !name.is_empty())?;
                let port = parts.next().filter(|port| !port.is_empty()).map(|port| {
                    let digits: String = port.chars().take_while(char::is_ascii_digit).collect();
                    digits.parse().unwrap_or(0)
                });
                Some(ListEntry {
                    name: name.to_owned(),
                    port,
                })
            })
            .collect();
        SelectList {
            exclude,
            exact,
            entries,
        }
    }

    /// The entry that matches `name` (and `port`, when both give one).
    pub fn entry_for(&self, name: &str, port: Option<u32>) -> Option<&ListEntry> {
        self.entries.iter().find(|entry| {
            let named = if self.exact {
                entry.name == name
            } else {
                name.starts_with(&entry.name)
            };
            named && (entry.port.is_none() || port.is_none() || entry.port == port)
        })
    }

    /// Whether NCCL uses `name` (and `port`) under this list.
    pub fn selects(&self, name: &str, port: Option<u32>) -> bool {
        self.entries.is_empty() || (self.entry_for(name, port).is_some() != self.exclude)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legacy_numbers_map_as_nccl_maps_them() {
        assert_eq!(legacy_level("0"), Some("LOC"));
        assert_eq!(legacy_level("2"), Some("PXB"));
        assert_eq!(legacy_level("3"), Some("PHB"));
        assert_eq!(legacy_level("5"), Some("SYS"));
        assert_eq!(legacy_level("99999999999999999999999"), Some("SYS"));
        assert_eq!(legacy_level("0x3"), Some("PHB"));
        assert_eq!(legacy_level("010"), Some("SYS"));
        assert_eq!(legacy_level("00"), Some("LOC"));
        assert_eq!(legacy_level("PHB"), None);
        assert_eq!(legacy_level(""), None);
    }

    #[test]
    fn levels_rank_as_nccl_orders_them() {
        assert!(level_rank("PXB") < level_rank("PHB"));
        assert_eq!(level_rank("3"), level_rank("PHB"));
        assert_eq!(level_rank("phb"), None, "strcmp: case matters");
        assert_eq!(level_rank("fast"), None);
    }

    #[test]
    fn lists_read_as_nccl_reads_them() {
        let list = SelectList::parse("=mlx5_0:1,mlx5_1");
        assert!(list.exact && !list.exclude);
        assert!(list.selects("mlx5_0", Some(1)));
        assert!(!list.selects("mlx5_0", Some(2)));
        assert!(list.selects("mlx5_1", Some(2)));
        assert!(!list.selects("mlx5_10", Some(1)));
        let prefix = SelectList::parse("mlx5_1");
        assert!(
            prefix.selects("mlx5_10", None),
            "a prefix also selects mlx5_10"
        );
        let exclude = SelectList::parse("^docker,lo");
        assert!(exclude.exclude && !exclude.selects("lo", None) && exclude.selects("net1", None));
        assert_eq!(SelectList::parse(",,eth:x").entries[0].port, Some(0));
        assert!(SelectList::parse("").selects("anything", None));
    }
}
