//! What an `NCCL_DEBUG=INFO` log says about the network path: the
//! network NCCL picked, the RDMA devices it found, whether GPUDirect RDMA
//! is on for each of them and why not, the transport of every channel, and
//! its warnings.
//!
//! The messages read are NCCL's own (`src/transport/net_ib*`,
//! `src/graph/paths.cc`, `src/graph/topo.cc`, `src/transport/net.cc`,
//! `src/init.cc`), in the wordings of releases 2.6 to 2.30.

use std::collections::{HashMap, HashSet};

use crate::nccl::debug_line::{Level, Message};
use crate::nccl::version::NcclVersion;

/// The most distinct items of one kind kept (hosts, HCAs, GPU/HCA pairs,
/// warnings): a log of a thousand nodes is summarised, not copied, and a
/// lookup among the kept items stays cheap for every message.
pub const MAX_ITEMS: usize = 256;

/// The network path as the log tells it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NcclLog {
    /// Debug messages read.
    pub messages: u64,
    /// The NCCL release, with the line that says it.
    pub version: Option<(u32, NcclVersion)>,
    /// Host names of the messages, in order of first appearance.
    pub hosts: Vec<String>,
    /// `NET/IB : Using [0]mlx5_0:1/RoCE …`: the RDMA devices NCCL uses.
    pub ib_devices: Vec<IbDevice>,
    /// `NET/IB : No device found.`: its first line.
    pub no_ib_device: Option<u32>,
    /// `NET/Socket : Using [0]eth0:10.0.0.1<0> …`: line and interfaces.
    pub socket_interfaces: Option<(u32, Vec<String>)>,
    /// `Using network IB|Socket|<plugin>`: each network once, with its first line.
    pub networks: Vec<(u32, String)>,
    /// `NET/OFI Selected Provider is efa (found 32 nics)`: line, provider, NICs.
    pub ofi_provider: Option<(u32, String, u32)>,
    /// `NET/IB : GPU Direct RDMA Enabled|Disabled for HCA n 'name'`, per HCA.
    pub hca_gdr: Vec<HcaGdr>,
    /// `GPU Direct RDMA Disabled for GPU … / HCA … (distance D > L)`, per pair.
    pub gdr_paths: Vec<GdrPath>,
    /// Channels over the network, per network name.
    pub net_channels: Vec<NetChannels>,
    /// Channels inside a node (P2P, SHM, NVLS…).
    pub local_channels: u64,
    /// `Got completion … with status=…` warnings, one per distinct error.
    pub completion_errors: Vec<CompletionError>,
    /// Other `NCCL WARN` messages, one per distinct text.
    pub warnings: Vec<Warning>,
    /// `NAME set by environment to VALUE`: line, name, value.
    pub environment: Vec<(u32, String, String)>,
    /// `comm … nRanks 16 nNodes 2 localRanks 8 …`: the communicator's shape.
    pub shape: Option<CommShape>,
    /// `DMA-BUF is available on GPU device N`: its first line.
    pub gpu_dmabuf: Option<u32>,
    /// `dlvsym failed on SYMBOL`: line and symbol (an RDMA library too old).
    pub missing_symbols: Vec<(u32, String)>,
    /// `… - Abort COMPLETE`: its first line.
    pub aborted: Option<u32>,
    /// The hosts already listed: every message looks its host up.
    seen_hosts: HashSet<String>,
    /// Where each distinct warning text is in `warnings`.
    warning_index: HashMap<String, usize>,
    /// Where each distinct (status, vendor error, HCA) is in `completion_errors`.
    error_index: HashMap<(u32, Option<u32>, Option<String>), usize>,
}

/// One RDMA device NCCL uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IbDevice {
    /// The line that lists it.
    pub line: u32,
    /// NCCL's index (`[0]`) in the `Using` line; `None` for a device only
    /// seen probed (`NET/IB: [0] mlx5_0:uverbs0:1/RoCE … speed=…`).
    pub index: Option<u32>,
    /// The device (`mlx5_0`).
    pub name: String,
    /// The port.
    pub port: u32,
    /// `IB` or `RoCE` (NCCL's `NCCL_IB_LLSTR`, without a plugin's
    /// `/SHARP`).
    pub link_layer: String,
    /// Its speed in Mb/s (`speed=100000`, NCCL 2.23 and later).
    pub speed_mbps: Option<u64>,
}

/// GPUDirect RDMA for one HCA as NCCL decided it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HcaGdr {
    /// The line of the first message; of the first `Disabled` one when
    /// processes disagree.
    pub line: u32,
    /// The network module (`IB`).
    pub net: String,
    /// The HCA (`mlx5_0`, or a merged `mlx5_0+mlx5_1`).
    pub name: String,
    /// Whether every message said `Enabled`.
    pub enabled: bool,
    /// `(no module)`: no peer-memory module (NCCL 2.12 and earlier).
    pub no_module: bool,
}

/// GPUDirect RDMA for one GPU and HCA, with the distance that decided it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GdrPath {
    /// Its line.
    pub line: u32,
    /// The GPU as NCCL names it (a bus ID in hex, or a rank).
    pub gpu: String,
    /// The HCA as NCCL names it (an index or a network ID).
    pub hca: String,
    /// `Enabled` or `Disabled`.
    pub enabled: bool,
    /// The path type number between them.
    pub distance: u32,
    /// The largest path type number GPUDirect RDMA is used at
    /// (`NCCL_NET_GDR_LEVEL`).
    pub level: u32,
}

/// The channels over one network.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetChannels {
    /// The network module (`IB`, `Socket`, `AWS Libfabric`).
    pub net: String,
    /// The first channel line.
    pub line: u32,
    /// Channel connections (send and receive each count).
    pub count: u64,
    /// Those with `/GDRDMA`: GPU memory read or written by the NIC.
    pub gdr: u64,
    /// The first channel line without `/GDRDMA`.
    pub first_without_gdr: Option<u32>,
}

/// An RDMA completion with an error status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompletionError {
    /// The first line with this error.
    pub line: u32,
    /// The host that logged it.
    pub host: String,
    /// `ibv_wc_status` of the completion.
    pub status: u32,
    /// The NIC vendor's syndrome.
    pub vendor_err: Option<u32>,
    /// The HCA, when NCCL names it (2.22 and later).
    pub hca: Option<String>,
    /// How many times it was logged.
    pub count: u64,
    /// The message, for evidence.
    pub text: String,
}

/// Any other `NCCL WARN`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    /// The first line with this text.
    pub line: u32,
    /// The source position NCCL names.
    pub source: Option<String>,
    /// The message.
    pub text: String,
    /// How many times it was logged.
    pub count: u64,
}

/// `comm … rank 0 nRanks 16 nNodes 2 localRanks 8 localRank 0 …`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommShape {
    /// Its line.
    pub line: u32,
    /// Ranks of the communicator.
    pub ranks: u32,
    /// Nodes it spans.
    pub nodes: u32,
    /// Ranks on the logging rank's node.
    pub local_ranks: u32,
}

impl NcclLog {
    /// The IP-over-InfiniBand interfaces among NCCL's socket interfaces
    /// (`ib0` of `[1]ib0:192.168.1.15<0>`): an InfiniBand fabric carrying
    /// TCP, not its own RDMA.
    pub fn ipoib_socket_interfaces(&self) -> Vec<&str> {
        self.socket_interfaces
            .iter()
            .flat_map(|(_, interfaces)| interfaces)
            .map(|i| i.split(':').next().unwrap_or(i))
            .filter(|name| zerohop_known::kernel_log::is_ipoib_name(name))
            .collect()
    }

    /// Reads one debug message. A message cut by another process's output
    /// is counted but not read: its end is missing.
    pub fn feed(&mut self, number: u32, message: &Message<'_>) {
        self.messages += 1;
        if self.hosts.len() < MAX_ITEMS && !self.seen_hosts.contains(message.host) {
            self.seen_hosts.insert(message.host.to_owned());
            self.hosts.push(message.host.to_owned());
        }
        if message.cut {
            return;
        }
        let text = message.text.trim();
        match message.level {
            Level::Warn => self.warning(number, message.host, message.source, text),
            Level::Info => self.info(number, text),
        }
    }

    /// Reads a line without a debug header: NCCL prints its version alone
    /// with `NCCL_DEBUG=VERSION`.
    pub fn plain(&mut self, number: u32, text: &str) {
        if let Some(rest) = text.trim().strip_prefix("NCCL version ")
            && self.version.is_none()
            && let Some(version) = NcclVersion::parse(rest)
        {
            self.version = Some((number, version));
        }
    }

    /// The hosts, for cutting glued messages (see
    /// [`split`](crate::nccl::debug_line::split)).
    pub fn host_set(&self) -> HashSet<String> {
        self.hosts.iter().cloned().collect()
    }

    fn info(&mut self, number: u32, text: &str) {
        if let Some(rest) = text.strip_prefix("NCCL version ") {
            if self.version.is_none()
                && let Some(version) = NcclVersion::parse(rest)
            {
                self.version = Some((number, version));
            }
        } else if text.starts_with("Channel ") {
            self.channel(number, text);
        } else if text.contains("GPU Direct RDMA ") {
            self.gdr(number, text);
        } else if let Some(rest) = text.strip_prefix("Using network ") {
            let name = rest.trim();
            if !self.networks.iter().any(|(_, n)| n == name) {
                self.networks.push((number, name.to_owned()));
            }
        } else if text.starts_with("NET/IB") {
            self.net_ib(number, text);
        } else if let Some(rest) = text.strip_prefix("NET/Socket : Using ") {
            if self.socket_interfaces.is_none() {
                let interfaces = rest
                    .split_whitespace()
                    .filter_map(|t| t.strip_prefix('[').and_then(|t| t.split_once(']')))
                    .map(|(_, iface)| iface.to_owned())
                    .collect();
                self.socket_interfaces = Some((number, interfaces));
            }
        } else if let Some(rest) = text.strip_prefix("NET/OFI Selected Provider is ") {
            if self.ofi_provider.is_none() {
                let provider = rest.split_whitespace().next().unwrap_or("").to_owned();
                let nics = rest
                    .split_once("(found ")
                    .and_then(|(_, n)| n.split_whitespace().next())
                    .and_then(|n| n.parse().ok())
                    .unwrap_or(0);
                self.ofi_provider = Some((number, provider, nics));
            }
        } else if let Some((name, value)) = text.split_once(" set by environment to ") {
            if self.environment.len() < MAX_ITEMS
                && !self.environment.iter().any(|(_, n, _)| n == name)
                && !name.contains(' ')
            {
                let value = value.trim().trim_end_matches('.').to_owned();
                self.environment.push((number, name.to_owned(), value));
            }
        } else if text.starts_with("comm ") && text.contains(" nNodes ") {
            if self.shape.is_none() {
                self.shape = comm_shape(number, text);
            }
        } else if text.starts_with("DMA-BUF is available on GPU device") {
            self.gpu_dmabuf.get_or_insert(number);
        } else if let Some(rest) = text.strip_prefix("dlvsym failed on ") {
            let symbol = rest.split_whitespace().next().unwrap_or("").to_owned();
            if self.missing_symbols.len() < MAX_ITEMS
                && !self.missing_symbols.iter().any(|(_, s)| *s == symbol)
            {
                self.missing_symbols.push((number, symbol));
            }
        } else if text.ends_with("Abort COMPLETE") {
            self.aborted.get_or_insert(number);
        }
    }

    fn net_ib(&mut self, number: u32, text: &str) {
        if text.contains("No device found") {
            self.no_ib_device.get_or_insert(number);
        } else if let Some(rest) = text.strip_prefix("NET/IB : Using ") {
            let devices = rest.split(';').next().unwrap_or("");
            for device in ib_devices(number, devices) {
                let room = self.ib_devices.len() < MAX_ITEMS;
                match self.ib_devices.iter_mut().find(|d| d.name == device.name) {
                    // Known from its probe line: now listed as used.
                    Some(known) if known.index.is_none() => {
                        let speed = known.speed_mbps;
                        *known = IbDevice {
                            speed_mbps: speed,
                            ..device
                        };
                    }
                    Some(_) => {}
                    None if room => self.ib_devices.push(device),
                    None => {}
                }
            }
        } else if let Some(rest) = text.strip_prefix("NET/IB: [") {
            // `NET/IB: [0] mlx5_0:uverbs0:1/RoCE provider=Mlx5 speed=100000 …`
            let name = rest
                .split_whitespace()
                .nth(1)
                .and_then(|t| t.split(':').next())
                .unwrap_or("");
            let speed = rest
                .split_whitespace()
                .find_map(|t| t.strip_prefix("speed="))
                .and_then(|s| s.parse().ok());
            if let Some(device) = self.ib_devices.iter_mut().find(|d| d.name == name) {
                device.speed_mbps = device.speed_mbps.or(speed);
            } else if !name.is_empty() && self.ib_devices.len() < MAX_ITEMS {
                // Probed before the `Using` line, which completes it.
                self.ib_devices.push(IbDevice {
                    line: number,
                    index: None,
                    name: name.to_owned(),
                    port: 0,
                    link_layer: String::new(),
                    speed_mbps: speed,
                });
            }
        }
    }

    fn channel(&mut self, number: u32, text: &str) {
        let Some((_, via)) = text.split_once(" via ") else {
            return;
        };
        let Some((net, gdr)) = net_transport(via) else {
            self.local_channels += 1;
            return;
        };
        let index = match self.net_channels.iter().position(|c| c.net == net) {
            Some(index) => index,
            None if self.net_channels.len() < MAX_ITEMS => {
                self.net_channels.push(NetChannels {
                    net: net.to_owned(),
                    line: number,
                    count: 0,
                    gdr: 0,
                    first_without_gdr: None,
                });
                self.net_channels.len() - 1
            }
            None => return,
        };
        let channels = &mut self.net_channels[index];
        channels.count += 1;
        if gdr {
            channels.gdr += 1;
        } else {
            channels.first_without_gdr.get_or_insert(number);
        }
    }

    fn gdr(&mut self, number: u32, text: &str) {
        let enabled = if text.contains("GPU Direct RDMA Enabled") {
            true
        } else if text.contains("GPU Direct RDMA Disabled") {
            false
        } else {
            return;
        };
        if let Some((_, rest)) = text.split_once(" for HCA ") {
            // `NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0' (no module)`
            let net = text
                .strip_prefix("NET/")
                .and_then(|t| t.split_once(" : "))
                .map_or("IB", |(net, _)| net.trim());
            let Some(name) = rest.split('\'').nth(1) else {
                return;
            };
            let no_module = rest.contains("(no module)");
            let room = self.hca_gdr.len() < MAX_ITEMS;
            match self
                .hca_gdr
                .iter_mut()
                .find(|h| h.name == name && h.net == net)
            {
                Some(known) => {
                    if known.enabled && !enabled {
                        known.line = number;
                    }
                    known.enabled &= enabled;
                    known.no_module |= no_module;
                }
                None if room => self.hca_gdr.push(HcaGdr {
                    line: number,
                    net: net.to_owned(),
                    name: name.to_owned(),
                    enabled,
                    no_module,
                }),
                None => {}
            }
        } else if let Some(path) = gdr_path(number, text, enabled)
            && self.gdr_paths.len() < MAX_ITEMS
            && !self
                .gdr_paths
                .iter()
                .any(|p| p.gpu == path.gpu && p.hca == path.hca)
        {
            self.gdr_paths.push(path);
        }
    }

    fn warning(&mut self, number: u32, host: &str, source: Option<&str>, text: &str) {
        if text.contains("Got completion") {
            if let Some(mut error) = completion_error(number, host, text) {
                let key = (error.status, error.vendor_err, error.hca.clone());
                match self.error_index.get(&key) {
                    Some(&index) => self.completion_errors[index].count += 1,
                    None if self.completion_errors.len() < MAX_ITEMS => {
                        error.count = 1;
                        self.error_index.insert(key, self.completion_errors.len());
                        self.completion_errors.push(error);
                    }
                    None => {}
                }
            }
            return;
        }
        match self.warning_index.get(text) {
            Some(&index) => self.warnings[index].count += 1,
            None if self.warnings.len() < MAX_ITEMS => {
                self.warning_index
                    .insert(text.to_owned(), self.warnings.len());
                self.warnings.push(Warning {
                    line: number,
                    source: source.map(str::to_owned),
                    text: text.to_owned(),
                    count: 1,
                });
            }
            None => {}
        }
    }
}

/// The devices of a `NET/IB : Using` line: `[0]mlx5_0:1/RoCE [1]mlx5_1:1/IB`
/// as NCCL prints them (`ncclIbInit`, `src/transport/net_ib.cc`), or grouped
/// into virtual NICs as HPC-X's `IBext_v8` plugin printed them in
/// NVIDIA/nccl-tests#373, `[0]={[0] mlx5_2:1/RoCE, [1] mlx5_3:1/RoCE}
/// [1]={[2] mlx5_0:1/RoCE, …}`, where the index next to a device is the
/// physical one. `[RO]` (relaxed ordering) is no device.
fn ib_devices(number: u32, list: &str) -> Vec<IbDevice> {
    let spaced: String = list
        .chars()
        .map(|c| {
            if matches!(c, '{' | '}' | ',' | '=') {
                ' '
            } else {
                c
            }
        })
        .collect();
    let mut index = None;
    let mut devices = Vec::new();
    for token in spaced.split_whitespace() {
        let mut rest = token;
        while let Some((inside, after)) = rest.strip_prefix('[').and_then(|t| t.split_once(']')) {
            if let Ok(number) = inside.parse::<u32>() {
                index = Some(number);
            }
            rest = after;
        }
        if rest.is_empty() {
            continue;
        }
        if let Some(device) = index
            .take()
            .and_then(|index| ib_device(number, index, rest))
        {
            devices.push(device);
        }
    }
    devices
}

/// `mlx5_0:1/RoCE` (or `mlx5_0:1/IB/SHARP`), NCCL's device `index`.
fn ib_device(number: u32, index: u32, text: &str) -> Option<IbDevice> {
    let (name, rest) = text.split_once(':')?;
    let (port, link_layer) = rest.split_once('/')?;
    Some(IbDevice {
        line: number,
        index: Some(index),
        name: name.to_owned(),
        port: port.parse().ok()?,
        // `IB`, `RoCE` or `UNSPECIFIED` (`NCCL_IB_LLSTR`); the SHARP
        // plugin appends `/SHARP`.
        link_layer: link_layer.split('/').next().unwrap_or("").to_owned(),
        speed_mbps: None,
    })
}

/// The network module and whether GPUDirect RDMA is used, from the
/// transport of a channel line (`NET/IB/0/GDRDMA`, `NET/Socket/1`,
/// `NET/AWS Libfabric/3(2)/GDRDMA`); `None` for transports inside a node.
pub fn net_transport(via: &str) -> Option<(&str, bool)> {
    let rest = via.trim().strip_prefix("NET/")?;
    for (slash, _) in rest.match_indices('/') {
        let tail = &rest[slash + 1..];
        let digits = tail.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 {
            return Some((&rest[..slash], tail[digits..].contains("/GDRDMA")));
        }
    }
    None
}

/// `GPU Direct RDMA Disabled for GPU 17000 / HCA 0 (distance 6 > 4)`.
fn gdr_path(number: u32, text: &str, enabled: bool) -> Option<GdrPath> {
    let (_, rest) = text.split_once(" for GPU ")?;
    let (gpu, rest) = rest.split_once(" / HCA ")?;
    let (hca, rest) = rest.split_once(" (distance ")?;
    let mut words = rest.split_whitespace();
    let distance = words.next()?.parse().ok()?;
    let _comparison = words.next()?;
    let level = words.next()?.trim_end_matches([')', ',']).parse().ok()?;
    Some(GdrPath {
        line: number,
        gpu: gpu.trim().to_owned(),
        hca: hca.trim().to_owned(),
        enabled,
        distance,
        level,
    })
}

/// The status, vendor error and HCA of a `Got completion` warning, in the
/// wordings of NCCL 2.12 (`with error 12, opcode 0, len 0, vendor err
/// 129`), 2.20 (`with status=12 opcode=0 len=0 vendor err 129 (Recv) …
/// hca mlx5_0`) and 2.29 (`with status=IBV_WC_RETRY_EXC_ERR(12) …
/// vendor_err=129 … hca mlx5_0`).
fn completion_error(number: u32, host: &str, text: &str) -> Option<CompletionError> {
    let status_text = text
        .split_once("status=")
        .or_else(|| text.split_once("with error "))?
        .1;
    let status = match status_text.find('(') {
        Some(open) if !status_text[..open].contains(' ') => {
            leading_number(&status_text[open + 1..])
        }
        _ => leading_number(status_text),
    }?;
    let vendor_err = text
        .split_once("vendor err ")
        .or_else(|| text.split_once("vendor_err="))
        .and_then(|(_, rest)| leading_number(rest));
    let hca = text
        .rsplit_once(" hca ")
        .and_then(|(_, rest)| rest.split_whitespace().next())
        .map(str::to_owned);
    Some(CompletionError {
        line: number,
        host: host.to_owned(),
        status,
        vendor_err,
        hca,
        count: 0,
        text: text.to_owned(),
    })
}

fn leading_number(text: &str) -> Option<u32> {
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    text[..digits].parse().ok()
}

/// `comm 0x55… rank 0 nRanks 2 nNodes 1 localRanks 2 localRank 0 MNNVL 0`.
fn comm_shape(number: u32, text: &str) -> Option<CommShape> {
    let words: Vec<&str> = text.split_whitespace().collect();
    let after = |key: &str| {
        words
            .iter()
            .position(|w| *w == key)
            .and_then(|i| words.get(i + 1))
            .and_then(|v| v.parse().ok())
    };
    Some(CommShape {
        line: number,
        ranks: after("nRanks")?,
        nodes: after("nNodes")?,
        local_ranks: after("localRanks")?,
    })
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;
    use crate::nccl::debug_line::split;

    fn read(text: &str) -> NcclLog {
        let mut log = NcclLog::default();
        for (line, number) in text.lines().zip(1..) {
            for message in split(line, &HashSet::new()).messages {
                log.feed(number, &message);
            }
        }
        log
    }

    #[test]
    fn devices_speeds_and_networks_are_read() {
        let log = read(
            "\
h:1:2 [1] NCCL INFO NET/IB: [0] mlx5_0:uverbs0:1/RoCE provider=Mlx5 speed=100000 context=0x1
h:1:2 [1] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_1:1/RoCE [RO]; OOB eno8303:192.168.0.3<0>
h:1:2 [1] NCCL INFO NET/IB: [1] mlx5_1:uverbs1:1/RoCE provider=Mlx5 speed=200000 context=0x2
h:1:2 [1] NCCL INFO Using network IB
h:1:3 [0] NCCL INFO Using network IB
h:1:2 [1] NCCL INFO NCCL_IB_GID_INDEX set by environment to 3.
h:1:2 [1] NCCL INFO comm 0x5 rank 0 nRanks 16 nNodes 2 localRanks 8 localRank 0 MNNVL 0",
        );
        assert_eq!(log.ib_devices.len(), 2);
        assert_eq!(log.ib_devices[0].speed_mbps, Some(100_000));
        assert_eq!(log.ib_devices[0].index, Some(0));
        assert_eq!(log.ib_devices[1].link_layer, "RoCE");
        assert_eq!(log.ib_devices[1].speed_mbps, Some(200_000));
        assert_eq!(log.networks, vec![(4, "IB".to_owned())]);
        assert_eq!(log.environment[0].1, "NCCL_IB_GID_INDEX");
        assert_eq!(log.environment[0].2, "3");
        let shape = log.shape.unwrap();
        assert_eq!((shape.ranks, shape.nodes, shape.local_ranks), (16, 2, 8));
    }

    #[test]
    fn channels_are_counted_per_network_with_gpudirect() {
        let log = read(
            "\
h:1:2 [3] NCCL INFO Channel 00/0 : 3[3] -> 7[3] [receive] via NET/Socket/1
h:1:2 [3] NCCL INFO Channel 01/0 : 7[3] -> 3[3] [send] via NET/IB/0/GDRDMA
h:1:2 [3] NCCL INFO Channel 02/0 : 7[3] -> 3[3] [send] via NET/IB/0(4)/GDRDMA/Shared
h:1:2 [3] NCCL INFO Channel 03/0 : 7[3] -> 3[3] [send] via NET/IB/1
h:1:2 [3] NCCL INFO Channel 00/0 : 4[0] -> 5[1] via P2P/CUMEM/read
h:1:2 [3] NCCL INFO Channel 00/0 : 4[0] -> 5[1] [send] via NET/AWS Libfabric/3/GDRDMA",
        );
        let by = |name: &str| log.net_channels.iter().find(|c| c.net == name).unwrap();
        assert_eq!(by("Socket").count, 1);
        assert_eq!(by("IB").count, 3);
        assert_eq!(by("IB").gdr, 2);
        assert_eq!(by("IB").first_without_gdr, Some(4));
        assert_eq!(by("AWS Libfabric").gdr, 1);
        assert_eq!(log.local_channels, 1);
    }

    #[test]
    fn gpudirect_decisions_are_read_per_hca_and_per_path() {
        let log = read(
            "\
h:1:2 [0] NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0' (no module)
h:1:2 [0] NCCL INFO NET/IB : GPU Direct RDMA Enabled for HCA 1 'mlx5_1'
h:1:3 [1] NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 1 'mlx5_1'
h:1:2 [0] NCCL INFO GPU Direct RDMA Disabled for GPU 17000 / HCA 0 (distance 6 > 4)
h:1:2 [0] NCCL INFO GPU Direct RDMA Enabled for GPU 3 / HCA 10000 (distance 4 <= 5), read 1 mode Default",
        );
        assert_eq!(log.hca_gdr.len(), 2);
        assert!(log.hca_gdr[0].no_module);
        // One process saw it disabled: disabled wins, with that line.
        assert!(!log.hca_gdr[1].enabled);
        assert_eq!(log.hca_gdr[1].line, 3);
        assert_eq!(log.gdr_paths.len(), 2);
        assert_eq!((log.gdr_paths[0].distance, log.gdr_paths[0].level), (6, 4));
        assert!(log.gdr_paths[1].enabled);
        assert_eq!(log.gdr_paths[1].level, 5);
    }

    #[test]
    fn completion_errors_are_read_in_every_wording() {
        let log = read(
            "\
a:1:2 [0] transport/net_ib.cc:839 NCCL WARN NET/IB : Got completion from peer 10.0.0.2<5> with error 12, opcode 0, len 0, vendor err 129
a:1:2 [0] ib_plugin.c:1615 NCCL WARN NET/IB : Got completion from peer 1.2.3.4<44206> with status=5 opcode=32656 len=32659 vendor err 249 (Recv) localGid ::ffff:1.2.3.4 remoteGids::ffff:1.2.3.5
a:1:2 [0] p2p.cc:688 NCCL WARN NET/IB: Got completion from peer 1.2.3.4<1> with status=IBV_WC_RETRY_EXC_ERR(12) opcode=IBV_WC_SEND(0) vendor_err=129 localGid x remoteGids y hca mlx5_3
a:1:2 [0] p2p.cc:688 NCCL WARN NET/IB: Got completion from peer 1.2.3.4<1> with status=IBV_WC_RETRY_EXC_ERR(12) opcode=IBV_WC_SEND(0) vendor_err=129 localGid x remoteGids y hca mlx5_3
a:1:2 [0] misc/socket.cc:50 NCCL WARN socket connect to 10.0.0.2<1234> failed : Connection refused",
        );
        let errors = &log.completion_errors;
        assert_eq!(errors.len(), 3);
        assert_eq!((errors[0].status, errors[0].vendor_err), (12, Some(129)));
        assert_eq!((errors[1].status, errors[1].vendor_err), (5, Some(249)));
        assert_eq!(errors[2].hca.as_deref(), Some("mlx5_3"));
        assert_eq!(errors[2].count, 2);
        assert_eq!(log.warnings.len(), 1);
        assert_eq!(log.warnings[0].source.as_deref(), Some("misc/socket.cc:50"));
    }

    #[test]
    fn devices_grouped_into_virtual_nics_are_read_one_by_one() {
        // NVIDIA/nccl-tests#373: HPC-X's IBext_v8 plugin, two merged NICs.
        let log = read(
            "bigo:1884:2298 [0] NCCL INFO NET/IB : Using [0]={[0] mlx5_2:1/RoCE, [1] mlx5_3:1/RoCE} [1]={[2] mlx5_0:1/RoCE, [3] mlx5_1:1/RoCE} [RO]; OOB bond0.526:169.136.106.9<0>",
        );
        let devices: Vec<(Option<u32>, &str, &str)> = log
            .ib_devices
            .iter()
            .map(|d| (d.index, d.name.as_str(), d.link_layer.as_str()))
            .collect();
        assert_eq!(
            devices,
            vec![
                (Some(0), "mlx5_2", "RoCE"),
                (Some(1), "mlx5_3", "RoCE"),
                (Some(2), "mlx5_0", "RoCE"),
                (Some(3), "mlx5_1", "RoCE"),
            ]
        );
        // The SHARP plugin's suffix is not part of the link layer.
        let log = read(
            "h:1:2 [7] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB/SHARP [1]mlx5_1:1/IB/SHARP [RO]; OOB ibp25s0:10.20.0.120<0>",
        );
        assert_eq!(log.ib_devices.len(), 2);
        assert_eq!(log.ib_devices[1].link_layer, "IB");
    }

    #[test]
    fn the_socket_fallback_is_read() {
        let log = read(
            "\
x:1:2 [2] NCCL INFO NET/IB : No device found.
x:1:2 [2] NCCL INFO NET/Socket : Using [0]bond0:10.140.57.102<0> [1]hsn1:10.201.2.19<0>
x:1:2 [2] NCCL INFO Using network Socket",
        );
        assert_eq!(log.no_ib_device, Some(1));
        let (_, interfaces) = log.socket_interfaces.unwrap();
        assert_eq!(
            interfaces,
            vec!["bond0:10.140.57.102<0>", "hsn1:10.201.2.19<0>"]
        );
        assert_eq!(log.networks[0].1, "Socket");
    }
}
