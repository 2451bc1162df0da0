//! Writing a rendered set to a directory: all at once, marked as a plan
//! output, and only ever in the place of a previous plan output.

mod install;
mod marker;

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

pub use marker::Foreign;
use marker::{Existing, MARKER};

use crate::render::ManifestSet;
use zerohop_input::os_reason as reason;

/// The most added or changed files a refusal names.
const LISTED: usize = 8;

/// Why the set could not be written. Every variant but
/// [`WriteError::UnsafePath`] is the environment's or the user's doing.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// The output names no directory that can be replaced as a whole
    /// (`.`, `..`, `/`).
    #[error("{} cannot be the output directory, which is replaced as a whole; name a new directory or a previous output, such as plan/", path.display())]
    BadTarget {
        /// The output directory as given.
        path: PathBuf,
    },
    /// The output exists and is not a previous output; it is left alone.
    #[error("{}", not_ours(path, reason))]
    NotOurs {
        /// The output directory.
        path: PathBuf,
        /// What makes it someone else's.
        reason: Foreign,
    },
    /// A file system operation failed. Before the new output is in place
    /// nothing was replaced; after, only removing the old one failed.
    #[error("cannot write {}: {reason}", path.display())]
    Io {
        /// The path as the user knows it (inside the output directory, not
        /// the staging directory).
        path: PathBuf,
        /// The operating system's reason, a lowercase fragment.
        reason: String,
    },
    /// The previous output was moved aside and could not be put back.
    #[error("the previous contents of {} are now at {}: they could not be put back ({reason}); move them back by hand", dir.display(), kept.display())]
    Stranded {
        /// The output directory.
        dir: PathBuf,
        /// Where its previous contents are.
        kept: PathBuf,
        /// The operating system's reason.
        reason: String,
    },
    /// A rendered file's path would leave the output directory: a bug in
    /// the renderer, refused before anything is written.
    #[error("rendered file path {path:?} is not a plain relative path")]
    UnsafePath {
        /// The rendered path.
        path: String,
    },
}

fn not_ours(path: &Path, reason: &Foreign) -> String {
    let dir = path.display();
    match reason {
        Foreign::NotADirectory => {
            format!("{dir} exists and is not a directory; choose another output directory")
        }
        Foreign::Link => {
            format!(
                "{dir} is a symbolic link, which is not followed; give the directory it points to, or another output directory"
            )
        }
        Foreign::NoMarker => format!(
            "{dir} is not empty and is not a zerohop plan output (it has no {MARKER}); choose a new directory, or empty this one"
        ),
        Foreign::UnknownMarker => format!(
            "{dir}/{MARKER} is not a marker this version of zerohop reads; delete {dir} to write a new plan there"
        ),
        Foreign::Oversized => format!(
            "{dir} holds far more files, or deeper directories, than a plan output; choose another output directory"
        ),
        Foreign::Changed { added, modified } => {
            let mut files: Vec<String> = added
                .iter()
                .map(|p| format!("{p} (added)"))
                .chain(modified.iter().map(|p| format!("{p} (changed)")))
                .collect();
            let more = files.len().saturating_sub(LISTED);
            files.truncate(LISTED);
            let mut list = files.join(", ");
            if more > 0 {
                list.push_str(&format!(" and {more} more"));
            }
            format!(
                "{dir} is a previous zerohop plan output with files added or changed since: {list}; move them out of it, or choose another output directory"
            )
        }
    }
}

/// Writes `set` to `dir` and returns the paths written, relative to `dir`.
///
/// Everything is written to a staging directory next to `dir` with a
/// marker file ([`MARKER`]) listing every file and its SHA-256, and the
/// staging directory then takes the place of `dir` (see
/// `install::install`). `dir` may be absent, an empty directory, or a
/// previous output whose files are unchanged (some may have been
/// deleted); anything else is refused and left exactly as it was: a file,
/// a directory without a marker, or a previous output to which files were
/// added or in which files were changed.
///
/// # Errors
/// [`WriteError`]. `dir` is then as it was, except in two cases a file
/// system can cause after the new output took its place: the replaced
/// output could not be deleted ([`WriteError::Io`] naming it), or a
/// directory found foreign could not be put back ([`WriteError::Stranded`]
/// says where it is).
pub fn write_set(set: &ManifestSet, dir: &Path) -> Result<Vec<String>, WriteError> {
    let Some(name) = dir.file_name() else {
        return Err(WriteError::BadTarget {
            path: dir.to_owned(),
        });
    };
    for file in &set.files {
        let mut components = Path::new(&file.path).components();
        let plain = components.all(|c| matches!(c, Component::Normal(_)))
            && !file.path.is_empty()
            && file.path != MARKER;
        if !plain {
            return Err(WriteError::UnsafePath {
                path: file.path.clone(),
            });
        }
    }
    let refused = |reason| WriteError::NotOurs {
        path: dir.to_owned(),
        reason,
    };
    match marker::inspect(dir).map_err(io_error(dir))? {
        Existing::Foreign(reason) => return Err(refused(reason)),
        Existing::Missing | Existing::Empty | Existing::Ours => {}
    }
    let parent = match dir.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    };
    fs::create_dir_all(&parent).map_err(io_error(&parent))?;
    let name = name.to_string_lossy();
    let staging = Staging::create(&parent, &name).map_err(io_error(dir))?;
    let written = write_into(set, &staging.path, dir)?;
    let aside = unique(&parent, &name, "old");
    match install::install(&staging.path, dir, &aside) {
        Ok(()) => Ok(written),
        Err(install::InstallError::NotOurs(reason)) => Err(refused(reason)),
        Err(install::InstallError::Io { path, source }) => Err(io_error(&path)(source)),
        Err(install::InstallError::Stranded { path, source }) => {
            // What is at the staging path may be the user's: keep it.
            staging.keep();
            Err(WriteError::Stranded {
                dir: dir.to_owned(),
                kept: path,
                reason: reason(&source),
            })
        }
    }
}

fn io_error(path: &Path) -> impl FnOnce(io::Error) -> WriteError + '_ {
    move |err| WriteError::Io {
        path: path.to_owned(),
        reason: reason(&err),
    }
}

/// Writes every file and then the marker into `staging`; errors name the
/// path inside `dir` that the file would have had.
fn write_into(set: &ManifestSet, staging: &Path, dir: &Path) -> Result<Vec<String>, WriteError> {
    let mut written = Vec::new();
    for file in &set.files {
        let path = staging.join(&file.path);
        let shown = dir.join(&file.path);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).map_err(io_error(&shown))?;
        }
        let mode = if file.path.ends_with(".sh") {
            0o755
        } else {
            0o644
        };
        create(&path, file.contents.as_bytes(), mode).map_err(io_error(&shown))?;
        written.push(file.path.clone());
    }
    let marker = marker::marker_text(
        set.files
            .iter()
            .map(|f| (f.path.as_str(), f.contents.as_bytes())),
    );
    create(&staging.join(MARKER), marker.as_bytes(), 0o644).map_err(io_error(&dir.join(MARKER)))?;
    Ok(written)
}

/// Creates a new file (never an existing one, never through a link) with
/// `mode` (less the umask).
fn create(path: &Path, contents: &[u8], mode: u32) -> io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)?;
    file.write_all(contents)?;
    file.flush()
}

/// A name next to the output, unique to this process and call:
/// `.NAME.zerohop-KIND-PID-N`.
fn unique(parent: &Path, name: &str, kind: &str) -> PathBuf {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    parent.join(format!(".{name}.zerohop-{kind}-{}-{n}", std::process::id()))
}

/// The staging directory, deleted when dropped unless kept.
struct Staging {
    path: PathBuf,
    keep: bool,
}

impl Staging {
    fn create(parent: &Path, name: &str) -> io::Result<Staging> {
        // A name left by a killed run of a process with the same ID is
        // skipped, not reused.
        let mut tries = 0;
        loop {
            let path = unique(parent, name, "staging");
            match fs::create_dir(&path) {
                Ok(()) => return Ok(Staging { path, keep: false }),
                Err(err) if err.kind() == io::ErrorKind::AlreadyExists && tries < 8 => tries += 1,
                Err(err) => return Err(err),
            }
        }
    }

    fn keep(mut self) {
        self.keep = true;
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        // After a successful install the path is gone; after a failure it
        // holds only the new output. Either way nothing of the user's.
        if !self.keep {
            let _ = fs::remove_dir_all(&self.path);
        }
    }
}
