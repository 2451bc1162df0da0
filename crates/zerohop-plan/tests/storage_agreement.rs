//! One set of facts for the storage data path: the mount options `plan`
//! renders into the NFS StorageClass and PersistentVolume are exactly the
//! ones the doctor passes when the kubelet has mounted them for a pod, and
//! the ones `lint` finds nothing in.

use std::fs;
use std::path::Path;

use serde_json::Value;
use zerohop_core::Status;
use zerohop_doctor::{Profile, Selection};
use zerohop_host::{Facts, HostRoot};
use zerohop_plan::{ManifestSet, Platform, load, render};

const INTENT: &str = "roce-nfs-csi-local-nvme.yaml";
/// The NFS checks that judge a mount's options and transports (NFS005,
/// the client module, depends on the node's RDMA stack instead).
const NFS_CHECKS: [&str; 5] = ["NFS001", "NFS002", "NFS003", "NFS004", "NFS006"];

fn rendered(platform: Platform) -> ManifestSet {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/consumers")
        .join(INTENT);
    let text = fs::read_to_string(&path).expect("intent");
    render(&load(INTENT, &text, Some(platform)).unwrap_or_else(|err| panic!("{err}")))
}

fn objects<'a>(set: &'a ManifestSet, kind: &str) -> Vec<&'a Value> {
    set.files
        .iter()
        .flat_map(|f| &f.objects)
        .filter(|o| o["kind"] == kind)
        .collect()
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .expect("a list")
        .iter()
        .map(|v| v.as_str().expect("a string").to_owned())
        .collect()
}

/// The NFS StorageClass's and PersistentVolume's mount options.
fn nfs_options(set: &ManifestSet) -> (Vec<String>, Vec<String>) {
    let class = objects(set, "StorageClass")
        .into_iter()
        .find(|c| c["provisioner"] == zerohop_known::storage::NFS_CSI_DRIVER)
        .expect("the nfs storage class");
    let volume = objects(set, "PersistentVolume")
        .into_iter()
        .find(|v| v["spec"]["csi"]["driver"] == zerohop_known::storage::NFS_CSI_DRIVER)
        .expect("the nfs volume");
    (
        strings(&class["mountOptions"]),
        strings(&volume["spec"]["mountOptions"]),
    )
}

fn write(root: &Path, path: &str, text: &str) {
    let path = root.join(path.trim_start_matches('/'));
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

/// Runs the NFS checks on a node where the kubelet mounted a pod's CSI
/// volume with `options` (the kernel shows them back with its own fields
/// added) over `nconnect` RDMA transports.
fn doctor_on_mount(options: &[String], nconnect: usize) -> Vec<(String, Status, String)> {
    let dir = tempfile::tempdir().expect("temp");
    let root = dir.path();
    let point = "/var/lib/kubelet/pods/0b1c2d3e-4f50-4617-8899-aabbccddeeff/volumes/kubernetes.io~csi/roce-csi-nfs-rdma/mount";
    let shown = format!(
        "rw,relatime,{},namlen=255,timeo=600,retrans=2,sec=sys,clientaddr=10.10.0.21,local_lock=none,addr=10.10.0.10",
        options.join(",")
    );
    write(
        root,
        "/proc/self/mountinfo",
        &format!(
            "21 0 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n\
             900 21 0:70 / {point} rw,relatime shared:400 - nfs4 10.10.0.10:/export/ai-data {shown}\n"
        ),
    );
    let xprts: String = (0..nconnect)
        .map(|_| "\txprt:\trdma 0 0 1 0 0 42 42 0 42 0 32 0 0\n".to_owned())
        .collect();
    write(
        root,
        "/proc/self/mountstats",
        &format!(
            "device 10.10.0.10:/export/ai-data mounted on {point} with fstype nfs4 statvers=1.1\n\topts:\t{shown}\n{xprts}"
        ),
    );
    let facts = Facts::collect(&HostRoot::at(root).expect("root"));
    let report = zerohop_doctor::run(
        &facts,
        &Profile::default(),
        &Selection::parse(NFS_CHECKS).expect("ids"),
    );
    report
        .findings
        .iter()
        .filter(|f| NFS_CHECKS.contains(&f.id.as_str()))
        .map(|f| (f.id.to_string(), f.status, f.message.clone()))
        .collect()
}

#[test]
fn the_storage_class_carries_exactly_the_options_the_doctor_passes() {
    for platform in [Platform::Kubernetes, Platform::Openshift] {
        let set = rendered(platform);
        let (class, volume) = nfs_options(&set);
        // The intent asks for nconnect 8.
        assert_eq!(class, zerohop_known::storage::data_path_options(8));
        assert_eq!(
            volume, class,
            "{platform:?}: the volume and its class differ"
        );
        let results = doctor_on_mount(&class, 8);
        assert_eq!(results.len(), NFS_CHECKS.len(), "{results:#?}");
        for (id, status, message) in &results {
            assert_eq!(*status, Status::Pass, "{platform:?} {id}: {message}");
        }
    }
}

#[test]
fn the_doctor_tells_when_an_option_of_the_class_is_missing_or_short() {
    let (class, _) = nfs_options(&rendered(Platform::Kubernetes));
    let without = |prefix: &str| -> Vec<String> {
        class
            .iter()
            .filter(|o| !o.starts_with(prefix))
            .cloned()
            .collect()
    };
    let status_of = |results: &[(String, Status, String)], id: &str| {
        results
            .iter()
            .find(|(found, ..)| found == id)
            .map(|(_, status, _)| *status)
    };
    // Without `port=` the doctor cannot confirm the port: not a pass.
    let results = doctor_on_mount(&without("port="), 8);
    assert_eq!(status_of(&results, "NFS002"), Some(Status::Info));
    // Without `proto=rdma` the pod's volume runs over tcp.
    let results = doctor_on_mount(&without("proto="), 8);
    assert_eq!(status_of(&results, "NFS001"), Some(Status::Fail));
    // Fewer transports than `nconnect` asks.
    let results = doctor_on_mount(&class, 2);
    assert_eq!(status_of(&results, "NFS003"), Some(Status::Warn));
}

#[test]
fn lint_finds_nothing_in_the_rendered_storage() {
    for platform in [Platform::Kubernetes, Platform::Openshift] {
        let set = rendered(platform);
        let inputs: Vec<zerohop_lint::Input> = set
            .files
            .iter()
            .filter(|f| {
                f.objects
                    .iter()
                    .any(|o| o["kind"] == "StorageClass" || o["kind"] == "PersistentVolume")
            })
            .map(|f| zerohop_lint::Input {
                name: f.path.clone(),
                content: Ok(f.contents.clone().into_bytes()),
            })
            .collect();
        assert!(!inputs.is_empty());
        let outcome = zerohop_lint::lint(&inputs, &zerohop_lint::Options::default());
        let storage: Vec<_> = outcome
            .findings
            .iter()
            .filter(|f| ["ZL071", "ZL072", "ZL080", "ZL082", "ZL083"].contains(&f.id.as_str()))
            .map(|f| (&f.id, &f.message))
            .collect();
        assert!(storage.is_empty(), "{platform:?}: {storage:#?}");
    }
}
