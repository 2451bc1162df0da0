//! A redacted snapshot holds none of the host's identifiers and the doctor
//! judges it as the original: for every doctor fixture root and every host
//! root of the shared corpus.

use zerohop_testkit::shared_data as support;

mod hosts;

use std::io::Read;
use std::net::Ipv4Addr;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use zerohop_core::Report;
use zerohop_doctor::{Profile, Selection};
use zerohop_host::memory::{Content, MemoryTree, Node};
use zerohop_host::{Facts, HostRoot};
use zerohop_snapshot::redact::redact;
use zerohop_snapshot::{Meta, Snapshot, encode, open};

/// A fixed recording time, so that archives compare byte for byte.
fn when() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_767_225_599)
}

fn statuses(report: &Report) -> Vec<(String, String)> {
    report
        .findings
        .iter()
        .map(|f| (f.id.clone(), format!("{:?}", f.status)))
        .collect()
}

/// The tar stream inside `archive`.
fn raw(archive: &[u8]) -> Vec<u8> {
    let mut bytes = Vec::new();
    zstd::Decoder::new(archive)
        .unwrap()
        .read_to_end(&mut bytes)
        .unwrap();
    bytes
}

/// Identifiers in `tree`, found apart from the redactor's own scanner:
/// the whole value of the files that are one identifier, and the dotted
/// IPv4 addresses and NQNs of files outside sysfs values and driver
/// reports (where dotted numbers are versions), less those that are kept.
fn identifiers(tree: &MemoryTree) -> Vec<String> {
    const WHOLE: [&str; 10] = [
        "address",
        "perm_address",
        "node_guid",
        "sys_image_guid",
        "serial",
        "product_serial",
        "board_serial",
        "hostid",
        "hostnqn",
        "subsysnqn",
    ];
    let mut found = Vec::new();
    for (path, node) in tree.nodes() {
        let Node::File(Content::Read(bytes)) = node else {
            continue;
        };
        let text = String::from_utf8_lossy(bytes);
        let name = path.rsplit('/').next().unwrap();
        let value = text.trim();
        let zero = value.bytes().all(|b| b == b'0' || b == b':');
        // An NVMe controller's `address` is a PCI address or `traddr=…`,
        // a netdev's a MAC: only hex digits and colons are one identifier.
        let hex = value.bytes().all(|b| b.is_ascii_hexdigit() || b == b':');
        let whole = WHOLE.contains(&name) && (hex || !name.contains("address"));
        if (whole || path.contains("/gids/")) && !zero {
            found.push(value.to_owned());
        }
        for word in text.split(|c: char| !(c.is_ascii_alphanumeric() || ".:-_".contains(c))) {
            if word.starts_with("nqn.") && !word.ends_with(".discovery") {
                found.push(word.to_owned());
            }
        }
        if path.starts_with("/sys/") && name != "address" || path.starts_with("/proc/driver/") {
            continue;
        }
        for word in text.split(|c: char| !(c.is_ascii_digit() || c == '.')) {
            let Ok(addr) = word.parse::<Ipv4Addr>() else {
                continue;
            };
            let first = addr.octets()[0];
            if first != 0 && first != 127 && first < 224 {
                found.push(word.to_owned());
            }
        }
    }
    found.sort();
    found.dedup();
    found
}

/// Whether `needle` occurs in `haystack` as a whole token (not inside a
/// longer number or name).
fn occurs(haystack: &[u8], needle: &str) -> bool {
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'.' || b == b':';
    haystack.windows(needle.len()).enumerate().any(|(i, w)| {
        w == needle.as_bytes()
            && (i == 0 || !word(haystack[i - 1]))
            && haystack.get(i + needle.len()).is_none_or(|b| !word(*b))
    })
}

/// Records and redacts `dir`; checks the redacted archive and returns how
/// many identifiers the original held.
fn assert_redacted(dir: &Path) -> usize {
    let tree = HostRoot::at(dir).expect("a directory root");
    let snapshot = Snapshot::capture(&tree, when()).expect("recorded");
    let redacted = redact(&snapshot).expect("redacted").snapshot;
    let archive = encode(&redacted).expect("encoded");
    // Deterministic: the same recording gives the same redacted bytes.
    let again = encode(&redact(&snapshot).unwrap().snapshot).unwrap();
    assert!(
        archive == again,
        "{}: redacting twice differs",
        dir.display()
    );

    // The report in the archive is the doctor's on the archive.
    let opened = open(&archive).unwrap_or_else(|err| panic!("{}: {err}", dir.display()));
    let facts = Facts::collect(&opened.root(redacted.meta.root.clone()));
    let on_snapshot = zerohop_doctor::run(&facts, &Profile::default(), &Selection::all());
    assert_eq!(
        opened.recorded_report().unwrap(),
        on_snapshot,
        "{}",
        dir.display()
    );

    // The same statuses, check by check, as the original.
    let original = snapshot.recorded_report().unwrap();
    assert_eq!(
        statuses(&original),
        statuses(&on_snapshot),
        "{}",
        dir.display()
    );

    // None of the original identifiers is left.
    let found = identifiers(&snapshot.tree);
    let bytes = raw(&archive);
    for identifier in &found {
        assert!(
            !occurs(&bytes, identifier),
            "{}: {identifier} is still in the redacted archive",
            dir.display()
        );
    }
    found.len()
}

#[test]
fn every_doctor_fixture_judges_the_same_redacted() {
    let mut identifiers = 0;
    for root in hosts::fixture_roots() {
        identifiers += assert_redacted(&root);
    }
    // GDS004's cufile.json, fib_trie and routes, NVME005's traddr and NQNs.
    assert!(identifiers > 20, "{identifiers} identifiers");
}

#[test]
fn every_corpus_host_judges_the_same_redacted() {
    let mut identifiers = 0;
    for host in hosts::corpus_hosts() {
        let found = assert_redacted(&host.root);
        eprintln!("{}: {found} identifiers", host.name);
        identifiers += found;
    }
    // The procfs fixtures' NFS mounts (`192.168.1.1:/srv/test`), libnvme's
    // subsystem NQNs (`nqn.1994-11.com.samsung:nvme:PM1743:…`) and
    // nvme-fabrics `traddr=10.0.0.1`.
    assert!(
        identifiers >= 10 || support::corpus().is_none(),
        "{identifiers} identifiers"
    );
}

/// A snapshot holding every kind of identifier, in the files that carry it.
fn every_kind() -> Snapshot {
    let files: &[(&str, &str)] = &[
        ("/proc/sys/kernel/hostname", "gpu-node-17.corp.example\n"),
        (
            "/proc/mounts",
            "nas-01.corp.example:/export /data nfs4 rw,addr=10.20.30.40,clientaddr=10.20.31.7 0 0\n",
        ),
        (
            "/proc/cmdline",
            "ip=10.20.31.7::10.20.31.1:255.255.255.0:gpu-node-17:eth0:off\n",
        ),
        ("/sys/class/net/eth0/address", "b8:3f:d2:11:22:33\n"),
        ("/sys/class/net/eth0/broadcast", "ff:ff:ff:ff:ff:ff\n"),
        (
            "/sys/class/net/ib0/address",
            "00:00:10:87:fe:80:00:00:00:00:00:00:0c:42:a1:03:00:65:8a:5e\n",
        ),
        (
            "/sys/class/infiniband/mlx5_0/node_guid",
            "0c42:a103:0065:8a5e\n",
        ),
        (
            "/sys/class/infiniband/mlx5_0/ports/1/gids/0",
            "fe80:0000:0000:0000:0c42:a103:0065:8a5e\n",
        ),
        (
            "/sys/class/infiniband/mlx5_1/ports/1/gids/0",
            "fe80:0000:0000:0000:ba3f:d2ff:fe11:2233\n",
        ),
        (
            "/sys/class/infiniband/mlx5_1/ports/1/gids/1",
            "0000:0000:0000:0000:0000:ffff:0a14:1f07\n",
        ),
        ("/sys/class/nvme/nvme0/serial", "PHLJ9123004X1P0FGN  \n"),
        ("/sys/class/dmi/id/product_serial", "CZ2D1234XY\n"),
        ("/etc/nvme/hostid", "4c4c4544-0031-3510-8033-b4c04f4e3332\n"),
        (
            "/etc/nvme/hostnqn",
            "nqn.2014-08.org.nvmexpress:uuid:4c4c4544-0031-3510-8033-b4c04f4e3332\n",
        ),
        (
            "/proc/driver/nvidia/gpus/0000:3b:00.0/information",
            "GPU UUID: \tGPU-8f0e3c5a-1f2b-3c4d-5e6f-a1b2c3d4e5f6\n",
        ),
        (
            "/proc/net/route",
            "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\neth0\t001F140A\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n",
        ),
    ];
    let mut tree = MemoryTree::new();
    for (path, content) in files {
        let node = Node::File(Content::Read(content.as_bytes().into()));
        tree.insert(*path, node).unwrap();
    }
    Snapshot {
        meta: Meta {
            zerohop_version: "0".to_owned(),
            created_at: "2025-12-31T23:59:59Z".to_owned(),
            created_unix: 1_767_225_599,
            hostname: Some("gpu-node-17.corp.example".to_owned()),
            kernel_release: None,
            root: "/captures/gpu-node-17".to_owned(),
            live: false,
        },
        report: Vec::new(),
        tree,
    }
}

fn content<'a>(tree: &'a MemoryTree, path: &str) -> &'a str {
    match tree.node(path) {
        Some(Node::File(Content::Read(bytes))) => std::str::from_utf8(bytes).unwrap(),
        other => panic!("{path}: {other:?}"),
    }
}

#[test]
fn every_kind_of_identifier_is_replaced_consistently() {
    let snapshot = every_kind();
    let redacted = redact(&snapshot).unwrap();
    let tree = &redacted.snapshot.tree;
    assert_eq!(
        redacted.snapshot.meta.hostname.as_deref(),
        Some("host1.invalid")
    );
    assert_eq!(redacted.snapshot.meta.root, "/captures/host1");
    assert_eq!(
        content(tree, "/proc/sys/kernel/hostname"),
        "host1.invalid\n"
    );
    // The NFS server is a second host; 10.20.30.40 and 10.20.31.7 stay in
    // one /16, in two /24s, with their last octets.
    assert_eq!(
        content(tree, "/proc/mounts"),
        "host2.invalid:/export /data nfs4 rw,addr=10.128.0.40,clientaddr=10.128.1.7 0 0\n"
    );
    assert_eq!(
        content(tree, "/proc/cmdline"),
        "ip=10.128.1.7::10.128.1.1:255.255.255.0:host1:eth0:off\n"
    );
    // The route to 10.20.31.0/24 (little-endian 001F140A) is the route to
    // 10.128.1.0/24, which holds 10.20.31.7's pseudonym 10.128.1.7.
    let route = content(tree, "/proc/net/route");
    assert!(route.contains("eth0\t0001800A\t00000000"), "{route}");
    // The MAC keeps its vendor; the link-local GID derived from it
    // (modified EUI-64) follows it; the InfiniBand GID, hardware address
    // and node GUID agree; the RoCE v2 GID embeds 10.20.31.7's pseudonym.
    assert_eq!(
        content(tree, "/sys/class/net/eth0/address"),
        "b8:3f:d2:00:00:01\n"
    );
    assert_eq!(
        content(tree, "/sys/class/net/eth0/broadcast"),
        "ff:ff:ff:ff:ff:ff\n"
    );
    assert_eq!(
        content(tree, "/sys/class/infiniband/mlx5_1/ports/1/gids/0"),
        "fe80:0000:0000:0000:ba3f:d2ff:fe00:0001\n"
    );
    assert_eq!(
        content(tree, "/sys/class/infiniband/mlx5_1/ports/1/gids/1"),
        "0000:0000:0000:0000:0000:ffff:0a80:0107\n"
    );
    assert_eq!(
        content(tree, "/sys/class/infiniband/mlx5_0/node_guid"),
        "0c42:a100:0000:0001\n"
    );
    assert_eq!(
        content(tree, "/sys/class/infiniband/mlx5_0/ports/1/gids/0"),
        "fe80:0000:0000:0000:0c42:a100:0000:0001\n"
    );
    assert_eq!(
        content(tree, "/sys/class/net/ib0/address"),
        "00:00:10:87:fe:80:00:00:00:00:00:00:0c:42:a1:00:00:00:00:01\n"
    );
    // Serials keep their length and padding; the host NQN embeds the
    // host ID's pseudonym.
    assert_eq!(
        content(tree, "/sys/class/nvme/nvme0/serial"),
        "S00000000000000002  \n"
    );
    assert_eq!(
        content(tree, "/sys/class/dmi/id/product_serial"),
        "S000000001\n"
    );
    assert_eq!(
        content(tree, "/etc/nvme/hostid"),
        "00000000-0000-4000-8000-000000000001\n"
    );
    assert_eq!(
        content(tree, "/etc/nvme/hostnqn"),
        "nqn.2014-08.org.nvmexpress:uuid:00000000-0000-4000-8000-000000000001\n"
    );
    assert_eq!(
        content(tree, "/proc/driver/nvidia/gpus/0000:3b:00.0/information"),
        "GPU UUID: \tGPU-00000000-0000-4000-8000-000000000002\n"
    );
    // The map says what each pseudonym stands for; it is not in the archive.
    let archive = raw(&encode(&redacted.snapshot).unwrap());
    for entry in &redacted.map {
        assert!(!occurs(&archive, &entry.original), "{entry:?}");
    }
    assert!(
        redacted
            .map
            .iter()
            .any(|e| e.kind == "hostname" && e.original == "gpu-node-17")
    );
}

/// A root planted with each kind of identifier the kernel log, audit and
/// configuration files carry: the host's full name where only its short
/// name is its host name, other hosts, users, serial numbers.
fn planted() -> Snapshot {
    let kernel_log = "\
6,1021,4051234,-;Kernel command line: BOOT_IMAGE=/vmlinuz ip=10.20.31.7::10.20.31.1:255.255.255.0:gpu-node-17.corp.example:eth0:off
6,1022,4051240,-;nvme nvme0: pci function 0000:5e:00.0
6,1023,4051250,-;nvme nvme0: new ctrl: NQN \"nqn.2014.08.org.nvmexpress:80868086PHLJ9123004X1P0FGN  INTEL SSDPE2KX010T8\"
6,1024,4051260,-;usb 1-1: SerialNumber: 0123ABCD4567
5,1025,4051270,-;audit: type=1101 audit(1767225500.123:42): pid=4242 uid=1000 auid=1000 ses=3 msg='op=PAM:accounting grantors=pam_unix acct=\"alice\" exe=\"/usr/bin/sudo\" hostname=jump-01.corp.example addr=10.20.99.5 terminal=/dev/pts/0 res=success' UID=\"alice\" AUID=\"bob\"
3,1026,4051280,-;nfs: server nas-02.corp.example not responding, still trying
";
    let cufile = "{\n    // tuned by carol for the 2025 cluster\n    \"logging\": {\n        /* ask dave before changing */\n        \"dir\": \"/home/erin/gds-logs\",\n        \"level\": \"ERROR\"\n    },\n    \"properties\": {\n        \"use_compat_mode\": false\n    }\n}\n";
    let files: &[(&str, &str)] = &[
        ("/proc/sys/kernel/hostname", "gpu-node-17\n"),
        (
            "/proc/cmdline",
            "BOOT_IMAGE=/vmlinuz ip=10.20.31.7::10.20.31.1:255.255.255.0:gpu-node-17.corp.example:eth0:off\n",
        ),
        ("/sys/class/nvme/nvme0/serial", "PHLJ9123004X1P0FGN  \n"),
        ("/var/log/zerohop/kmsg", kernel_log),
        ("/etc/cufile.json", cufile),
    ];
    let mut tree = MemoryTree::new();
    for (path, content) in files {
        let node = Node::File(Content::Read(content.as_bytes().into()));
        tree.insert(*path, node).unwrap();
    }
    Snapshot {
        meta: Meta {
            zerohop_version: "0".to_owned(),
            created_at: "2025-12-31T23:59:59Z".to_owned(),
            created_unix: 1_767_225_599,
            hostname: Some("gpu-node-17".to_owned()),
            kernel_release: None,
            root: "/".to_owned(),
            live: false,
        },
        report: Vec::new(),
        tree,
    }
}

#[test]
fn a_redacted_archive_names_no_host_user_or_serial() {
    let snapshot = planted();
    let redacted = redact(&snapshot).unwrap();
    let archive = raw(&encode(&redacted.snapshot).unwrap());
    let text = String::from_utf8_lossy(&archive);
    for identifier in [
        "gpu-node-17",
        "corp.example",
        "jump-01",
        "nas-02",
        "alice",
        "bob",
        "carol",
        "dave",
        "erin",
        "PHLJ9123004X1P0FGN",
        "0123ABCD4567",
    ] {
        assert!(
            !text.contains(identifier),
            "{identifier} is still in the redacted archive"
        );
    }
    let tree = &redacted.snapshot.tree;
    // The full name is the host's own: the same number as its short name.
    assert_eq!(redacted.snapshot.meta.hostname.as_deref(), Some("host1"));
    let cmdline = content(tree, "/proc/cmdline");
    assert!(cmdline.ends_with(":host1.invalid:eth0:off\n"), "{cmdline}");
    let log = content(tree, "/var/log/zerohop/kmsg");
    assert!(log.contains(":host1.invalid:eth0:off"), "{log}");
    // Other hosts, each its own pseudonym.
    let host = |name: &str| {
        redacted
            .map
            .iter()
            .find(|e| e.kind == "hostname" && e.original == name)
            .map(|e| e.pseudonym.clone())
            .unwrap_or_else(|| panic!("{name}: {:#?}", redacted.map))
    };
    let (jump, nas) = (host("jump-01.corp.example"), host("nas-02.corp.example"));
    assert!(jump != nas && jump != "host1.invalid" && nas != "host1.invalid");
    assert!(log.contains(&format!("hostname={jump} ")), "{log}");
    assert!(
        log.contains(&format!("nfs: server {nas} not responding")),
        "{log}"
    );
    // One user, one pseudonym, wherever audit names them.
    let user = |name: &str| {
        redacted
            .map
            .iter()
            .find(|e| e.kind == "user" && e.original == name)
            .map(|e| e.pseudonym.clone())
            .unwrap_or_else(|| panic!("{name}: {:#?}", redacted.map))
    };
    let (alice, bob) = (user("alice"), user("bob"));
    assert_ne!(alice, bob);
    assert!(
        log.contains(&format!("acct=\"{alice}\""))
            && log.contains(&format!("UID=\"{alice}\" AUID=\"{bob}\"")),
        "{log}"
    );
    // uid=1000 is a number, not a name; the superuser is nobody in particular.
    assert!(log.contains("uid=1000 auid=1000"), "{log}");
    // The drive's serial is gone from its NQN in the kernel log too.
    assert!(log.contains("new ctrl: NQN \"nqn."), "{log}");
    // Comments are blanked, lines and columns kept; the document is the same.
    let cufile = content(tree, "/etc/cufile.json");
    assert_eq!(cufile.lines().count(), 11);
    let erin = user("erin");
    assert!(
        cufile.contains(&format!("\"dir\": \"/home/{erin}/gds-logs\"")),
        "{cufile}"
    );
    assert_eq!(
        zerohop_known::jsonc::parse(cufile).unwrap()["properties"],
        zerohop_known::jsonc::parse(content(&snapshot.tree, "/etc/cufile.json")).unwrap()["properties"]
    );
    // The map names each kind.
    for (kind, original) in [
        ("hostname", "gpu-node-17.corp.example"),
        ("hostname", "jump-01.corp.example"),
        ("user", "alice"),
        ("serial", "0123ABCD4567"),
    ] {
        assert!(
            redacted
                .map
                .iter()
                .any(|e| e.kind == kind && e.original == original),
            "{kind} {original}: {:#?}",
            redacted.map
        );
    }
}
