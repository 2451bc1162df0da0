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
}
