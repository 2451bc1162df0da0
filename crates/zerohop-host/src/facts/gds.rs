//! GPUDirect Storage: `cufile.json`, the `nvidia-fs` driver, and the local
//! addresses that `rdma_dev_addr_list` must name.

use std::collections::BTreeMap;
use std::net::IpAddr;

use crate::facts::{Fact, Gap};
use crate::parse::jsonc::{self, JsoncError};
use crate::parse::netaddr;
use crate::root::HostRoot;

/// Where libcufile reads its configuration unless `CUFILE_ENV_PATH_JSON` says otherwise.
pub const CUFILE_DEFAULT: &str = "/etc/cufile.json";
pub use crate::process::CUFILE_ENV;
/// The largest `cufile.json` read. NVIDIA's file is about 10 KiB; anything
/// near this is not a configuration file, and reading it whole would cost
/// memory for nothing.
pub const CUFILE_CAP: usize = 1 << 20;
/// The `nvidia-fs` driver's procfs directory (NVIDIA/gds-nvidia-fs `src/nvfs-proc.c`).
pub const NVIDIA_FS_PROC: &str = "/proc/driver/nvidia-fs";

/// The most files read from [`NVIDIA_FS_PROC`] and the most bytes of each.
const NVIDIA_FS_FILES: usize = 16;
const NVIDIA_FS_CAP: usize = 256 << 10;

/// A `cufile.json` that was found.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct CufileJson {
    /// The host path it was read from.
    pub path: String,
    /// Whether the path came from `CUFILE_ENV_PATH_JSON`.
    pub from_env: bool,
    /// The document, or why it does not parse.
    pub parsed: Result<serde_json::Value, JsoncError>,
}

/// A network interface.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct NetDev {
    /// `ens1f0np0`, `ib0`.
    pub name: String,
    /// Whether its device also has an RDMA device (`device/infiniband`).
    pub rdma: bool,
}

/// A local address and the interface it is on, when known.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct LocalAddress {
    /// The address.
    pub addr: IpAddr,
    /// The interface, from the connected routes (IPv4) or `if_inet6` (IPv6).
    pub iface: Option<String>,
}

/// GPUDirect Storage facts.
#[derive(Debug, Clone, serde::Serialize)]
pub struct GdsFacts {
    /// Where `cufile.json` is looked for.
    pub cufile_path: String,
    /// Whether [`GdsFacts::cufile_path`] came from `CUFILE_ENV_PATH_JSON`.
    pub cufile_from_env: bool,
    /// The configuration file.
    pub cufile: Fact<CufileJson>,
    /// Files of `/proc/driver/nvidia-fs` by name (`version`, `devcount`…).
    pub nvidia_fs_proc: Fact<BTreeMap<String, String>>,
    /// Network interfaces from `/sys/class/net`.
    pub netdevs: Fact<Vec<NetDev>>,
    /// Local IPv4 (`/proc/net/fib_trie` + `/proc/net/route`) and IPv6
    /// (`/proc/net/if_inet6`) addresses.
    pub addresses: Fact<Vec<LocalAddress>>,
}

impl GdsFacts {
    /// Reads the GDS facts. `CUFILE_ENV_PATH_JSON` is a variable of a
    /// process's environment: the one the reading process was started
    /// with, honoured only when it runs on the host
    /// ([`Process::cufile_env_path`]).
    ///
    /// [`Process::cufile_env_path`]: crate::process::Process::cufile_env_path
    pub fn collect(root: &HostRoot) -> GdsFacts {
        let env_path = root.process().cufile_env_path();
        let from_env = env_path.is_some();
        let cufile_path = env_path.unwrap_or(CUFILE_DEFAULT).to_owned();
        GdsFacts {
            cufile: read_cufile(root, &cufile_path, from_env),
            cufile_path,
            cufile_from_env: from_env,
            nvidia_fs_proc: nvidia_fs_proc(root),
            netdevs: netdevs(root),
            addresses: addresses(root),
        }
    }

    /// The interface named `name`.
    pub fn netdev(&self, name: &str) -> Option<&NetDev> {
        match &self.netdevs {
            Ok(Some(devs)) => devs.iter().find(|d| d.name == name),
            _ => None,
        }
    }
}

/// Reads and parses `cufile.json` at `path`, capped at [`CUFILE_CAP`].
pub fn read_cufile(root: &HostRoot, path: &str, from_env: bool) -> Fact<CufileJson> {
    let Some(text) = root.read_with_cap(path, CUFILE_CAP)? else {
        return Ok(None);
    };
    Ok(Some(CufileJson {
        path: path.to_owned(),
        from_env,
        parsed: jsonc::parse(&text),
    }))
}

fn nvidia_fs_proc(root: &HostRoot) -> Fact<BTreeMap<String, String>> {
    let Some(names) = root.list(NVIDIA_FS_PROC)? else {
        return Ok(None);
    };
    let mut files = BTreeMap::new();
    for name in names.into_iter().take(NVIDIA_FS_FILES) {
        // Some entries are write-only controls; what cannot be read is left out.
        if let Ok(Some(text)) =
            root.read_with_cap(&format!("{NVIDIA_FS_PROC}/{name}"), NVIDIA_FS_CAP)
        {
            files.insert(name, text);
        }
    }
    Ok(Some(files))
}

fn netdevs(root: &HostRoot) -> Fact<Vec<NetDev>> {
    let Some(names) = root.list("/sys/class/net")? else {
        return Ok(None);
    };
    let mut netdevs = Vec::with_capacity(names.len());
    for name in names {
        // An interface whose RDMA link cannot be looked at makes the list
        // unknown: taking it for one without RDMA would fail a good address.
        let rdma = root.exists(&format!("/sys/class/net/{name}/device/infiniband"))?;
        netdevs.push(NetDev { rdma, name });
    }
    Ok(Some(netdevs))
}

fn addresses(root: &HostRoot) -> Fact<Vec<LocalAddress>> {
    let fib = root.read("/proc/net/fib_trie").map_err(Gap::from)?;
    let inet6 = root.read("/proc/net/if_inet6").map_err(Gap::from)?;
    if fib.is_none() && inet6.is_none() {
        return Ok(None);
    }
    let route = root
        .read("/proc/net/route")
        .map_err(Gap::from)?
        .unwrap_or_default();
    let routes = netaddr::routes(&route);
    let mut addresses: Vec<LocalAddress> = netaddr::local_ipv4(fib.as_deref().unwrap_or(""))
        .into_iter()
        .map(|addr| LocalAddress {
            addr: IpAddr::V4(addr),
            iface: netaddr::iface_of(&routes, addr).map(str::to_owned),
        })
        .collect();
    addresses.extend(
        netaddr::if_inet6(inet6.as_deref().unwrap_or(""))
            .into_iter()
            .map(|(addr, iface)| LocalAddress {
                addr: IpAddr::V6(addr),
                iface: Some(iface.to_owned()),
            }),
    );
    Ok(Some(addresses))
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;

    #[test]
    fn oversized_cufile_is_a_gap_not_a_read() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join("etc")).unwrap();
        let file = fs::File::create(dir.path().join("etc/cufile.json")).unwrap();
        // A sparse 100 MB file: only the cap is ever read.
        file.set_len(100_000_000).unwrap();
        let root = HostRoot::at(dir.path()).unwrap();
        let gap = read_cufile(&root, CUFILE_DEFAULT, false).unwrap_err();
        assert_eq!(gap.kind, crate::facts::GapKind::TooLarge);
        assert!(gap.reason.contains("larger than"), "{gap}");
    }

    #[test]
    fn the_cufile_path_of_the_environment_comes_from_the_process() {
        // A process started with CUFILE_ENV_PATH_JSON, on this machine: no
        // environment variable of the test process is read or changed.
        let path = "/nonexistent-zerohop-test/cufile.json";
        let live = HostRoot::live_as(crate::Process::live(Some(path.to_owned())));
        let facts = GdsFacts::collect(&live);
        assert_eq!(facts.cufile_path, path);
        assert!(facts.cufile_from_env);
        assert_eq!(facts.cufile, Ok(None));
        // Beside a directory, the reader's environment is not the host's.
        let dir = tempfile::tempdir().unwrap();
        let facts = GdsFacts::collect(&HostRoot::at(dir.path()).unwrap());
        assert_eq!(facts.cufile_path, CUFILE_DEFAULT);
        assert!(!facts.cufile_from_env);
    }

    #[test]
    fn truncated_cufile_names_the_line() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join("etc")).unwrap();
        fs::write(
            dir.path().join("etc/cufile.json"),
            "{\n // c\n \"properties\": {\n   \"allow_compat_mode\": tr",
        )
        .unwrap();
        let root = HostRoot::at(dir.path()).unwrap();
        let cufile = read_cufile(&root, CUFILE_DEFAULT, false).unwrap().unwrap();
        let err = cufile.parsed.unwrap_err();
        assert_eq!(err.line, 4);
    }
}
