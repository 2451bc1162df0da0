//! What one cluster is: the inputs whose objects the cross-object rules see
//! together.
//!
//! A network a pod names, a resource a policy advertises, a second
//! ClusterPolicy: these judgements hold only among objects that are applied
//! to the same cluster. Linting a deployment file by file would miss what
//! its files say to each other: a guide's manifests are a plain directory of
//! numbered files, applied with `kubectl apply -f DIR`, which applies them
//! all. [`Scope::Auto`] takes the unit that tools apply together:
//! - a directory holding a `kustomization.yaml` (`.yml`, or `Kustomization`)
//!   is one cluster, everything under it included: `kubectl apply -k` and
//!   `kustomize build` apply it as one (the topmost such directory below a
//!   linted one wins, so overlays and their bases stay together);
//! - every other file found under a directory named on the command line
//!   belongs to that directory's cluster, as `kubectl apply -R -f DIR`
//!   applies it;
//! - the files named on the command line, and standard input, are one
//!   cluster: whoever lists them means them together.
//!
//! Objects of one cluster that cannot meet are not compared: the rules
//! resolve names within a namespace, and compare node policies only when
//! their node selectors can select the same node, so a folder of unrelated
//! examples in their own namespaces or for their own nodes raises no
//! cross-object alarm. `--scope file` lints every file alone.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// How the inputs of a run are grouped into clusters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Scope {
    /// Kustomization directories, each directory named on the command line,
    /// and the files named on it (see the module documentation).
    #[default]
    Auto,
    /// Every input of the run is one cluster.
    All,
    /// Every file is a cluster of its own.
    File,
}

/// The cluster an input belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Cluster {
    /// The inputs of the whole run ([`Scope::All`]), or those named on the
    /// command line ([`Scope::Auto`]).
    Run,
    /// Everything under a directory with a kustomization.
    Kustomization(PathBuf),
    /// The files under a directory named on the command line that no
    /// kustomization holds.
    Directory(PathBuf),
    /// The input alone: its index in the batch.
    Alone(usize),
}

/// The file names that make a directory a kustomization
/// (kubernetes-sigs/kustomize `api/konfig/general.go`,
/// `RecognizedKustomizationFileNames`).
const KUSTOMIZATION_FILES: [&str; 3] = ["kustomization.yaml", "kustomization.yml", "Kustomization"];

/// Finds the kustomization directories of the files found under one
/// linted directory, looking at each directory once.
#[derive(Debug, Default)]
pub(crate) struct Kustomizations {
    known: HashMap<PathBuf, bool>,
}

impl Kustomizations {
    /// Whether `dir` holds a kustomization file (a regular file, not a
    /// link: a link is not followed here either).
    fn holds(&mut self, dir: &Path) -> bool {
        *self.known.entry(dir.to_path_buf()).or_insert_with(|| {
            KUSTOMIZATION_FILES.iter().any(|name| {
                std::fs::symlink_metadata(dir.join(name)).is_ok_and(|m| m.file_type().is_file())
            })
        })
    }

    /// The topmost directory from `root` down to the directory of `file`
    /// that holds a kustomization, when one does.
    pub(crate) fn of(&mut self, root: &Path, file: &Path) -> Option<PathBuf> {
        let relative = file.parent()?.strip_prefix(root).ok()?;
        let mut dir = root.to_path_buf();
        if self.holds(&dir) {
            return Some(dir);
        }
        for component in relative.components() {
            dir.push(component);
            if self.holds(&dir) {
                return Some(dir);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_topmost_kustomization_directory_wins() {
        let root = tempfile::tempdir().expect("temp dir");
        let base = root.path().join("app/base");
        let other = root.path().join("examples");
        std::fs::create_dir_all(&base).unwrap();
        std::fs::create_dir_all(&other).unwrap();
        std::fs::write(
            root.path().join("app/kustomization.yaml"),
            "resources: []\n",
        )
        .unwrap();
        std::fs::write(base.join("kustomization.yaml"), "resources: []\n").unwrap();
        let mut kustomizations = Kustomizations::default();
        assert_eq!(
            kustomizations.of(root.path(), &base.join("pod.yaml")),
            Some(root.path().join("app"))
        );
        assert_eq!(
            kustomizations.of(root.path(), &other.join("pod.yaml")),
            None
        );
    }
}
