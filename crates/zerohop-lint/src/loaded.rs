//! Inputs loaded as soon as they are read, within a memory budget for the
//! whole run.
//!
//! Cross-object rules need every object of a run at once, so what a run
//! holds grows with its inputs: the text (kept for source excerpts) and the
//! node tree, which for dense YAML is tens of times the size of the text. A
//! [`Batch`] loads each input as it is added, keeps of an input that failed
//! only the line its error is on, and refuses to grow past
//! [`MAX_HELD_BYTES`].

use std::collections::HashMap;
use std::fmt;
use std::mem::size_of;
use std::path::Path;

use zerohop_core::render::snippet::Texts;
use zerohop_k8s::schema::CrdCatalog;
use zerohop_k8s::yaml::{
    self, Entry, Limits, LoadError, LoadErrorKind, Mark, Node, Value, Yaml11Reading,
};
use zerohop_known::{cufile, jsonc};

use crate::scope::{Cluster, Kustomizations, Scope};
use crate::{Input, NotRead, inputs, is_cufile};

/// The most memory the inputs of one run may hold, text and parsed trees
/// together (estimated from the trees' sizes): 1 GiB, some 30 inputs of
/// the 32 MiB limit as manifests are usually written, one or two of the
/// densest YAML.
pub const MAX_HELD_BYTES: usize = 1024 * 1024 * 1024;

/// Longest line of a failed input kept to show where the error is.
const MAX_EXCERPT_BYTES: usize = 64 * 1024;

/// One input, loaded.
#[derive(Debug)]
pub struct Loaded {
    /// The name findings use for it.
    pub name: String,
    pub(crate) content: Content,
}

#[derive(Debug)]
pub(crate) enum Content {
    /// The text and its documents, and whether they are a `cufile.json`
    /// (by name, or by content for a `.json` input).
    Documents {
        text: String,
        documents: Vec<Node>,
        cufile: bool,
    },
    /// Not valid (or acceptable) YAML: why, and the line the error is on
    /// when it is text and short enough to show.
    Invalid {
        error: LoadError,
        line: Option<String>,
    },
    /// Not read.
    NotRead(NotRead),
    /// A host file ([`inputs::is_host_file_name`]): its text, read as
    /// the program that uses it reads it, by the rules that need it.
    HostFile { text: String },
}

impl Loaded {
    /// Roughly how many bytes of memory the input holds: its text and its
    /// node tree, or the error line kept of a failed input.
    pub fn held_bytes(&self) -> usize {
        match &self.content {
            Content::Documents {
                text, documents, ..
            } => text.capacity() + documents.iter().map(weight).sum::<usize>(),
            Content::Invalid { line, .. } => line.as_ref().map_or(0, String::capacity),
            Content::HostFile { text } => text.capacity(),
            Content::NotRead(_) => 0,
        }
    }
}

/// Loads one input: parses its text into documents (a `cufile.json`, by
/// name or by content, with its comments blanked out), or records why that
/// failed.
pub fn load(input: Input, limits: &Limits) -> Loaded {
    let Input { name, content } = input;
    let content = match content {
        Err(not_read) => Content::NotRead(not_read),
        Ok(bytes) => match String::from_utf8(bytes) {
            Ok(text) if inputs::is_host_file_name(Path::new(&name)) => {
                if text.len() > limits.max_bytes {
                    // Too large: the loader says so, as for any input.
                    match yaml::load_str(&text, limits) {
                        Err(error) => Content::Invalid { error, line: None },
                        Ok(_) => Content::HostFile { text },
                    }
                } else {
                    Content::HostFile { text }
                }
            }
            Ok(text) => {
                let (documents, cufile) = if is_cufile(&name) {
                    (load_cufile(&text, limits), true)
                } else if is_json_name(&name) {
                    load_json(&text, limits)
                } else {
                    (yaml::load_str(&text, limits), false)
                };
                match documents {
                    Ok(documents) => Content::Documents {
                        text,
                        documents,
                        cufile,
                    },
                    Err(error) => Content::Invalid {
                        line: excerpt(text.as_bytes(), error.at.line),
                        error,
                    },
                }
            }
            Err(not_text) => {
                // `load_bytes` says why (too large, or where the first byte
                // that is not UTF-8 is); it cannot succeed on these bytes.
                let bytes = not_text.into_bytes();
                match yaml::load_bytes(&bytes, limits) {
                    Err(error) => Content::Invalid {
                        line: excerpt(&bytes, error.at.line),
                        error,
                    },
                    Ok(_) => Content::NotRead(NotRead::Failed("input is not UTF-8 text".into())),
                }
            }
        },
    };
    Loaded { name, content }
}

/// Line `number` (1-based) of `bytes` when it is UTF-8 and at most
/// [`MAX_EXCERPT_BYTES`] long.
fn excerpt(bytes: &[u8], number: u32) -> Option<String> {
    let index = usize::try_from(number).ok()?.checked_sub(1)?;
    let line = bytes.split(|&b| b == b'\n').nth(index)?;
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.len() > MAX_EXCERPT_BYTES {
        return None;
    }
    std::str::from_utf8(line).ok().map(str::to_owned)
}

/// An estimate of the memory a node and everything below it take: the
/// node itself, and each heap block it owns as the allocator hands it out.
fn weight(node: &Node) -> usize {
    let yaml11 = node.yaml11.as_ref().map_or(0, |reading| {
        block(size_of::<Yaml11Reading>()) + block(reading.text.capacity())
    });
    size_of::<Node>()
        + yaml11
        + match &node.value {
            Value::String(text) => block(text.capacity()),
            Value::Sequence(items) => {
                block(items.capacity() * size_of::<Node>()) - items.len() * size_of::<Node>()
                    + items.iter().map(weight).sum::<usize>()
            }
            Value::Mapping(entries) => {
                block(entries.capacity() * size_of::<Entry>()) - entries.len() * size_of::<Node>()
                    + entries
                        .iter()
                        .map(|entry| block(entry.key.capacity()) + weight(&entry.value))
                        .sum::<usize>()
            }
            Value::Null | Value::Bool(_) | Value::Int(_) | Value::Float(_) => 0,
        }
}

/// The bytes a heap block of `size` bytes takes: common allocators add a
/// header, round up to 16 bytes and hand out at least 32 (a one-letter
/// string costs 32 bytes, not 1).
fn block(size: usize) -> usize {
    if size == 0 {
        0
    } else {
        (size + 8).next_multiple_of(16).max(32)
    }
}

/// Largest `.json` input whose content is parsed a second time to tell
/// whether it is a `cufile.json`: far above any real one (a few KiB), far
/// below the 32 MiB an input may have, whose parse as a whole would cost
/// hundreds of MiB.
const MAX_SNIFFED_BYTES: usize = 1024 * 1024;

/// Whether an input's name ends in `.json` (any case).
fn is_json_name(name: &str) -> bool {
    name.len() >= 5
        && name
            .get(name.len() - 5..)
            .is_some_and(|end| end.eq_ignore_ascii_case(".json"))
}

/// Loads a `.json` input not named `cufile.json`: as a cuFile configuration
/// when its content is one ([`cufile::looks_like_cufile`]), whatever the
/// file is called, else as the YAML every JSON manifest also is. Only a
/// document that is not a Kubernetes object, or that YAML cannot read (a
/// `//` comment, which cuFile allows), is parsed a second time to tell.
fn load_json(text: &str, limits: &Limits) -> (Result<Vec<Node>, LoadError>, bool) {
    let as_yaml = yaml::load_str(text, limits);
    let maybe_cufile = match &as_yaml {
        Ok(documents) => matches!(
            documents.as_slice(),
            [root] if !root.entries().is_empty()
                && root.get("apiVersion").is_none()
                && root.get("kind").is_none()
        ),
        Err(_) => true,
    };
    let maybe_cufile = maybe_cufile && text.len() <= MAX_SNIFFED_BYTES.min(limits.max_bytes);
    if maybe_cufile && jsonc::parse(text).is_ok_and(|value| cufile::looks_like_cufile(&value)) {
        (load_cufile(text, limits), true)
    } else {
        (as_yaml, false)
    }
}

/// `cufile.json` is JSON with `//` and `/* */` comments: it must parse as
/// the doctor parses it (strict JSON once the comments are stripped, by the
/// same code), and is then loaded as YAML flow, whose nodes keep their
/// spans (comments blanked, so lines and columns stay those of the file).
fn load_cufile(text: &str, limits: &Limits) -> Result<Vec<Node>, LoadError> {
    if text.len() > limits.max_bytes {
        // Too large: the loader says so without the work of parsing.
        return yaml::load_str(text, limits);
    }
    let invalid = |line: usize, column: usize, message: String| LoadError {
        at: Mark {
            line: u32::try_from(line).unwrap_or(u32::MAX),
            column: u32::try_from(column).unwrap_or(u32::MAX),
        },
        kind: LoadErrorKind::Json(message),
    };
    if let Err(err) = jsonc::parse(text) {
        return Err(invalid(err.line, err.column, err.message));
    }
    let stripped = jsonc::strip_comments(text)
        .map_err(|unclosed| invalid(unclosed.line, unclosed.column, unclosed.to_string()))?;
    yaml::load_str(&stripped, limits)
}

/// Why a run stopped before linting anything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CollectError {
    /// A path named on the command line does not exist.
    NotFound(String),
    /// A directory named on the command line holds no manifest.
    NoManifests {
        /// The directory as named.
        dir: String,
        /// How many paths under it were skipped (symlinks leaving it,
        /// directories too deep).
        skipped: usize,
    },
    /// The inputs would hold more than the run's memory budget.
    OverBudget {
        /// The input that went past the budget.
        name: String,
        /// The budget in bytes.
        limit: usize,
    },
}

impl fmt::Display for CollectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CollectError::NotFound(path) => write!(f, "{path}: no such file or directory"),
            CollectError::NoManifests { dir, skipped: 0 } => write!(
                f,
                "{dir}: no *.yaml, *.yml or *.json file to lint in this directory"
            ),
            CollectError::NoManifests { dir, skipped } => write!(
                f,
                "{dir}: no *.yaml, *.yml or *.json file to lint in this directory ({skipped} symlinks or directories under it skipped: symlinks leaving it are not followed)"
            ),
            CollectError::OverBudget { name, limit } => write!(
                f,
                "at {name}, the inputs of this run hold more than {} MiB once parsed, the limit of one run; lint fewer or smaller files at a time",
                limit / (1024 * 1024)
            ),
        }
    }
}

impl std::error::Error for CollectError {}

/// The inputs of one run, each loaded as it is added, and the cluster
/// each belongs to.
#[derive(Debug)]
pub struct Batch {
    limits: Limits,
    max_held: usize,
    held: usize,
    loaded: Vec<Loaded>,
    scope: Scope,
    /// The cluster of each input, by index.
    clusters: Vec<Cluster>,
    /// Whether a symlink named on the command line is followed even when
    /// its target leaves the directory it sits in.
    follow_symlinks: bool,
}

impl Batch {
    /// An empty batch loading with `limits`, holding at most `max_held`
    /// bytes ([`MAX_HELD_BYTES`] for the command line).
    pub fn new(limits: Limits, max_held: usize) -> Batch {
        Batch {
            limits,
            max_held,
            held: 0,
            loaded: Vec::new(),
            scope: Scope::default(),
            clusters: Vec::new(),
            follow_symlinks: false,
        }
    }

    /// The batch, following a symlink named in [`Batch::add_path`] wherever
    /// it leads when `follow` (`--follow-symlinks`); by default a named link
    /// whose target leaves the directory it sits in is skipped.
    pub fn with_follow_symlinks(mut self, follow: bool) -> Batch {
        self.follow_symlinks = follow;
        self
    }

    /// The batch, grouping what is added next into clusters by `scope`.
    pub fn with_scope(mut self, scope: Scope) -> Batch {
        self.scope = scope;
        self
    }

    /// Loads `input` and keeps it, in the cluster of the command line (or
    /// alone, with [`Scope::File`]).
    ///
    /// # Errors
    /// [`CollectError::OverBudget`] when the batch would hold more than its
    /// budget; the input is dropped.
    pub fn add(&mut self, input: Input) -> Result<(), CollectError> {
        let cluster = match self.scope {
            Scope::Auto | Scope::All => Cluster::Run,
            Scope::File => Cluster::Alone(self.loaded.len()),
        };
        self.add_to(input, cluster)
    }

    /// Loads `input` and keeps it in `cluster`.
    fn add_to(&mut self, input: Input, cluster: Cluster) -> Result<(), CollectError> {
        let loaded = load(input, &self.limits);
        self.held = self.held.saturating_add(loaded.held_bytes());
        if self.held > self.max_held {
            return Err(CollectError::OverBudget {
                name: loaded.name,
                limit: self.max_held,
            });
        }
        self.loaded.push(loaded);
        self.clusters.push(cluster);
        Ok(())
    }

    /// Adds what a command-line path names: standard input for `-`, the
    /// manifests under a directory, or a file.
    ///
    /// # Errors
    /// A path that does not exist, a directory with no manifest, or the
    /// budget exceeded.
    pub fn add_path(&mut self, path: &Path) -> Result<(), CollectError> {
        let limit = self.limits.max_bytes;
        if path.as_os_str() == "-" {
            return self.add(inputs::stdin(limit));
        }
        if !self.follow_symlinks
            && let Some(skipped) = inputs::named_link_leaving(path)
        {
            return self.add(skipped);
        }
        match std::fs::metadata(path) {
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                Err(CollectError::NotFound(path.display().to_string()))
            }
            Ok(metadata) if metadata.is_dir() => {
                let before = self.loaded.len();
                let mut kustomizations = Kustomizations::default();
                let manifests = inputs::search(path, true, limit, &mut |input| {
                    let cluster = match self.scope {
                        Scope::All => Cluster::Run,
                        Scope::File => Cluster::Alone(self.loaded.len()),
                        Scope::Auto => kustomizations.of(path, Path::new(&input.name)).map_or_else(
                            || Cluster::Directory(path.to_path_buf()),
                            Cluster::Kustomization,
                        ),
                    };
                    self.add_to(input, cluster)
                })?;
                // Instructions (a README) alone are nothing to lint.
                let added: Vec<&Loaded> = self
                    .loaded
                    .get(before..)
                    .unwrap_or_default()
                    .iter()
                    .filter(|input| !inputs::is_instructions(Path::new(&input.name)))
                    .collect();
                // An unreadable directory is reported as such (ZL001), not
                // as an empty one.
                let all_skipped = added.iter().all(|input| {
                    matches!(&input.content, Content::NotRead(not_read) if not_read.is_skip())
                });
                if manifests == 0 && all_skipped {
                    return Err(CollectError::NoManifests {
                        dir: path.display().to_string(),
                        skipped: added.len(),
                    });
                }
                Ok(())
            }
            _ => self.add(inputs::named_file(path, limit)),
        }
    }

    /// The inputs loaded so far, in the order added.
    pub fn loaded(&self) -> &[Loaded] {
        &self.loaded
    }

    /// The inputs grouped into clusters, each in the order added, the
    /// clusters in the order of their first input.
    pub fn clusters(&self) -> Vec<Vec<&Loaded>> {
        let mut order: Vec<&Cluster> = Vec::new();
        let mut groups: HashMap<&Cluster, Vec<&Loaded>> = HashMap::new();
        for (cluster, loaded) in self.clusters.iter().zip(&self.loaded) {
            let group = groups.entry(cluster).or_insert_with(|| {
                order.push(cluster);
                Vec::new()
            });
            group.push(loaded);
        }
        order
            .into_iter()
            .filter_map(|cluster| groups.remove(cluster))
            .collect()
    }

    /// Roughly how many bytes the batch holds.
    pub fn held_bytes(&self) -> usize {
        self.held
    }
}

/// The text of every loaded input (of a failed one, the line its error is
/// on), for source excerpts in the human report.
pub fn texts(loaded: &[Loaded]) -> Texts<'_> {
    let mut texts = Texts::default();
    for input in loaded {
        match &input.content {
            Content::Documents { text, .. } | Content::HostFile { text } => {
                texts.add(&input.name, text);
            }
            Content::Invalid {
                error,
                line: Some(line),
            } => texts.add_line(&input.name, error.at.line, line),
            Content::Invalid { line: None, .. } | Content::NotRead(_) => {}
        }
    }
    texts
}

/// Reads the CustomResourceDefinitions in `dir` (its own `*.yaml`, `*.yml`
/// and `*.json` files, not subdirectories) the way lint reads manifests:
/// regular files only, no symlink out of the directory, each input within
/// `limits`. The CRDs of a list (`kubectl get crd -o yaml`) are read; other
/// documents are ignored. [`CrdCatalog::crd_count`] says how many were
/// loaded.
///
/// # Errors
/// A message naming the file that could not be read or parsed, or the CRD
/// that is not valid; it never quotes the file's content. A directory with
/// no CRD at all is an error too: validating against nothing would pass
/// every custom resource without a word.
pub fn load_crds(dir: &Path, limits: &Limits) -> Result<CrdCatalog, String> {
    let mut documents = Vec::new();
    inputs::search(dir, false, limits.max_bytes, &mut |input| {
        let name = input.name.clone();
        match load(input, limits).content {
            Content::Documents {
                documents: docs, ..
            } => {
                documents.extend(
                    docs.iter()
                        .filter(|doc| !matches!(doc.value, Value::Null))
                        .map(Node::to_json),
                );
                Ok(())
            }
            Content::Invalid { error, .. } => Err(format!("{name}: {error}")),
            Content::NotRead(not_read) => Err(format!("{name}: {not_read}")),
            // Not searched for here: only manifests are listed.
            Content::HostFile { .. } => Ok(()),
        }
    })?;
    let catalog = CrdCatalog::from_documents(documents).map_err(|err| err.to_string())?;
    if catalog.crd_count() == 0 {
        return Err(
            "no CustomResourceDefinition in its *.yaml, *.yml or *.json files (a `kind: List` of them, as `kubectl get crd -o yaml` writes, is read too)"
                .to_owned(),
        );
    }
    Ok(catalog)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unclosed_comment_makes_a_cufile_invalid() {
        let loaded = load(
            Input {
                name: "etc/cufile.json".into(),
                content: Ok(b"{\n  \"logging\": {} /* until the end\n}\n".to_vec()),
            },
            &Limits::default(),
        );
        let Content::Invalid { error, .. } = &loaded.content else {
            panic!("{loaded:?}");
        };
        assert_eq!((error.at.line, error.at.column), (2, 17));
        assert_eq!(
            error.kind,
            LoadErrorKind::Json("block comment is not closed".into())
        );
    }

    #[test]
    fn a_failed_input_keeps_only_its_error_line() {
        let mut text = "apiVersion: v1\nkind: Pod\nmetadata:\n\tname: x\n".to_owned();
        text.push_str(&"# padding\n".repeat(10_000));
        let loaded = load(
            Input {
                name: "tabs.yaml".into(),
                content: Ok(text.into_bytes()),
            },
            &Limits::default(),
        );
        let Content::Invalid { error, line } = &loaded.content else {
            panic!("{loaded:?}");
        };
        assert_eq!(error.at.line, 4);
        assert_eq!(line.as_deref(), Some("\tname: x"));
        assert!(loaded.held_bytes() < 64, "{}", loaded.held_bytes());
    }

    #[test]
    fn held_bytes_grow_with_the_tree_not_only_the_text() {
        let dense = format!("items: [{}a]\n", "a,".repeat(10_000));
        let loaded = load(
            Input {
                name: "dense.yaml".into(),
                content: Ok(dense.clone().into_bytes()),
            },
            &Limits::default(),
        );
        assert!(
            loaded.held_bytes() > 10 * dense.len(),
            "{} for {} bytes",
            loaded.held_bytes(),
            dense.len()
        );
    }
}
