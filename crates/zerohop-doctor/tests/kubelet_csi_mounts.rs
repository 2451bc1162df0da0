//! The doctor follows the volumes the kubelet mounts for pods through CSI:
//! an NFS volume under `/var/lib/kubelet/pods/<uid>/volumes/kubernetes.io~csi/<pv>/mount`
//! is judged like a declared data mount, and named by its PersistentVolume
//! and pod. The host tree is laid out from a real kubelet's volume
//! (`tests/captures/kubelet_csi_nfs_volume_csi_driver_nfs.txt`, see
//! `tests/captures/SOURCES.md`): the pod UID, the PersistentVolume and the
//! CSI driver's unique volume name come from its log line; the directory
//! layout and `vol_data.json`'s keys are the kubelet's
//! (kubernetes v1.34 `pkg/volume/csi/csi_mounter.go`, `GetPath`,
//! `volDataKey`; `csi_plugin.go`, `volDataFileName`).

mod support;

use std::fs;
use std::path::Path;

use zerohop_core::Status;
use zerohop_doctor::{Profile, Selection};

use support::{doctor_with, findings, scratch};

/// What the capture's kubelet line says of the volume.
struct Volume {
    pv: String,
    pod_uid: String,
    driver: String,
    handle: String,
    node: String,
}

/// The text between `start` and the next `end` after it.
fn between<'a>(text: &'a str, start: &str, end: &str) -> &'a str {
    let from = text.find(start).expect(start) + start.len();
    let len = text[from..].find(end).expect(end);
    &text[from..from + len]
}

fn captured() -> Volume {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/captures/kubelet_csi_nfs_volume_csi_driver_nfs.txt");
    let line = fs::read_to_string(path).expect("capture");
    // `UniqueName: "kubernetes.io/csi/<driver>^<volume handle>"`.
    let unique = between(&line, "(UniqueName: \\\"kubernetes.io/csi/", "\\\")");
    let (driver, handle) = unique.split_once('^').expect("driver^handle");
    Volume {
        pv: between(&line, "for volume \\\"", "\\\"").to_owned(),
        pod_uid: between(&line, "(UID: \\\"", "\\\")").to_owned(),
        driver: driver.to_owned(),
        handle: handle.to_owned(),
        node: line.split_whitespace().nth(3).expect("host").to_owned(),
    }
}

fn write(root: &Path, path: &str, text: &str) {
    let path = root.join(path.trim_start_matches('/'));
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

/// A node with the captured volume mounted with `options` (as the kernel
/// shows them) and `xprts` transports of `protocol` in mountstats.
fn node(
    volume: &Volume,
    options: &str,
    protocol: &str,
    xprts: usize,
) -> (tempfile::TempDir, String) {
    let dir = scratch();
    let root = dir.path();
    let volume_dir = format!(
        "/var/lib/kubelet/pods/{}/volumes/kubernetes.io~csi/{}",
        volume.pod_uid, volume.pv
    );
    let mount_point = format!("{volume_dir}/mount");
    // The source csi-driver-nfs mounts: the handle's server and share,
    // with the provisioned subdirectory (`host#share#subdir#…`).
    let parts: Vec<&str> = volume.handle.split('#').collect();
    let source = format!("{}:/{}/{}", parts[0], parts[1], parts[2]);
    write(
        root,
        "/proc/self/mountinfo",
        &format!(
            "21 0 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n\
             912 21 0:77 / {mount_point} rw,relatime shared:501 - nfs4 {source} {options}\n"
        ),
    );
    let transports: String = (0..xprts)
        .map(|_| format!("\txprt:\t{protocol} 0 0 1 0 0 42 42 0 42 0 32 0 0\n"))
        .collect();
    write(
        root,
        "/proc/self/mountstats",
        &format!(
            "device /dev/sda1 mounted on / with fstype ext4\n\
             device {source} mounted on {mount_point} with fstype nfs4 statvers=1.1\n\
             \topts:\t{options}\n{transports}"
        ),
    );
    write(
        root,
        &format!("{volume_dir}/vol_data.json"),
        &serde_json::json!({
            "attachmentID": "",
            "driverName": volume.driver,
            "nodeName": volume.node,
            "specVolID": volume.pv,
            "volumeHandle": volume.handle,
            "volumeLifecycleMode": "Persistent",
        })
        .to_string(),
    );
    write(
        root,
        "/proc/modules",
        "rpcrdma 450560 1 - Live 0x0000000000000000\nib_core 434176 4 rpcrdma, Live 0x0000000000000000\n",
    );
    (dir, mount_point)
}

/// The kernel's view of the data-path options: what `plan` renders into
/// the StorageClass, with the fields the kernel adds.
fn rdma_options() -> String {
    format!(
        "rw,relatime,{},namlen=255,timeo=600,retrans=2,sec=sys,clientaddr=10.10.0.21,local_lock=none,addr=10.10.0.10",
        zerohop_known::storage::data_path_options(16).join(",")
    )
}

fn nfs_and_gds() -> Selection {
    Selection::parse(["NFS001", "NFS002", "NFS003", "NFS004", "NFS006", "GDS005"]).unwrap()
}

#[test]
fn a_csi_nfs_volume_over_rdma_passes_every_nfs_check_and_names_its_volume() {
    let volume = captured();
    assert_eq!(volume.driver, zerohop_known::storage::NFS_CSI_DRIVER);
    let (dir, mount_point) = node(&volume, &rdma_options(), "rdma", 16);
    let report = doctor_with(dir.path(), &Profile::default(), &nfs_and_gds());
    for id in ["NFS001", "NFS002", "NFS003", "NFS004", "NFS006", "GDS005"] {
        let found = findings(&report, id);
        assert_eq!(found.len(), 1, "{id}: {found:#?}");
        let finding = found[0];
        assert_eq!(finding.status, Status::Pass, "{id}: {finding:#?}");
        assert_eq!(finding.subject, mount_point, "{id}");
        // The evidence names the PersistentVolume, the pod and the driver
        // from vol_data.json.
        let named = finding.evidence.iter().any(|e| {
            e.source.ends_with("/vol_data.json")
                && e.value.contains(&volume.pv)
                && e.value.contains(&volume.pod_uid)
                && e.value.contains("csi driver nfs.csi.k8s.io")
        });
        assert!(named, "{id}: {:#?}", finding.evidence);
    }
}

#[test]
fn a_pod_volume_also_declared_with_mount_is_judged_once() {
    let volume = captured();
    let (dir, mount_point) = node(&volume, &rdma_options(), "rdma", 16);
    // The user names the volume's directory (twice, as a pasted command
    // line can): one verdict, the volume's, with its vol_data.json.
    let profile = Profile {
        mounts: vec![mount_point.clone(), mount_point.clone()],
        ..Profile::default()
    };
    let report = doctor_with(dir.path(), &profile, &nfs_and_gds());
    let gds = findings(&report, "GDS005");
    assert_eq!(gds.len(), 1, "{gds:#?}");
    assert_eq!(gds[0].subject, mount_point);
    assert!(
        gds[0]
            .evidence
            .iter()
            .any(|e| e.source.ends_with("/vol_data.json")),
        "{:#?}",
        gds[0].evidence
    );
}

#[test]
fn a_csi_nfs_volume_over_tcp_fails_like_a_declared_data_mount() {
    let volume = captured();
    let options = "rw,relatime,vers=4.1,rsize=65536,wsize=65536,namlen=255,soft,proto=tcp,timeo=600,retrans=2,sec=sys,clientaddr=10.10.0.21,local_lock=none,addr=10.10.0.10";
    let (dir, _) = node(&volume, options, "tcp", 1);
    let report = doctor_with(dir.path(), &Profile::default(), &nfs_and_gds());
    // Nothing declares it and nothing asks for rdma: a home directory
    // would be `info`; a pod's volume is a data mount.
    let nfs001 = findings(&report, "NFS001");
    assert_eq!(nfs001[0].status, Status::Fail, "{nfs001:#?}");
    assert!(
        nfs001[0].message.starts_with("pod volume over tcp"),
        "{}",
        nfs001[0].message
    );
    let fix = nfs001[0].remediation.as_ref().expect("a fix");
    assert!(
        fix.commands.iter().any(|c| c.contains("kubectl patch pv")
            && c.contains(&volume.pv)
            && c.contains("port=20049")),
        "{fix:#?}"
    );
    assert_eq!(findings(&report, "NFS004")[0].status, Status::Warn);
    assert_eq!(findings(&report, "NFS006")[0].status, Status::Warn);
    // GDS005 judges it too: nfs over tcp is not read directly.
    let gds = findings(&report, "GDS005");
    assert_eq!(gds[0].status, Status::Info, "{gds:#?}");
    assert!(
        gds[0].message.contains("gds needs nfs over rdma"),
        "{}",
        gds[0].message
    );
}

#[test]
fn a_missing_or_hostile_vol_data_json_leaves_the_directory_name() {
    let volume = captured();
    let (dir, _) = node(&volume, &rdma_options(), "rdma", 16);
    let data = dir.path().join(format!(
        "var/lib/kubelet/pods/{}/volumes/kubernetes.io~csi/{}/vol_data.json",
        volume.pod_uid, volume.pv
    ));
    for text in [None, Some("[1,2"), Some("\"not an object\"")] {
        match text {
            None => fs::remove_file(&data).ok(),
            Some(text) => fs::write(&data, text).ok(),
        };
        let report = doctor_with(dir.path(), &Profile::default(), &nfs_and_gds());
        let nfs001 = findings(&report, "NFS001");
        assert_eq!(nfs001[0].status, Status::Pass, "{text:?}");
        assert!(
            nfs001[0]
                .evidence
                .iter()
                .any(|e| e.value.starts_with(&format!(
                    "volume {} of pod {}, csi",
                    volume.pv, volume.pod_uid
                ))),
            "{text:?}: {:#?}",
            nfs001[0].evidence
        );
    }
}
