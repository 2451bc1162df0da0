//! Writing a rendered set to a directory, all or nothing.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::render::ManifestSet;

/// Why the set could not be written.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// `DIR` exists and is not a directory, or has files we did not write.
    #[error("{} exists and is not a previous `zerohop plan` output (no README.md and kustomization.yaml); refusing to replace it", path.display())]
    NotOurs {
        /// The output directory.
        path: PathBuf,
    },
    /// A file system operation failed.
    #[error("cannot write {}: {source}", path.display())]
    Io {
        /// What was being written.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
}

fn io_error(path: &Path) -> impl FnOnce(io::Error) -> WriteError + '_ {
    move |source| WriteError::Io {
        path: path.to_owned(),
        source,
    }
}

/// Writes `set` to `dir`: everything goes to a temporary directory next to
/// `dir`, which then replaces it with a rename, so `dir` is never half
/// written. A previous plan output in `dir` is replaced; anything else is
/// refused. Returns the paths written, relative to `dir`.
pub fn write_set(set: &ManifestSet, dir: &Path) -> Result<Vec<String>, WriteError> {
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "plan".to_owned());
    if dir.exists()
        && !(dir.is_dir()
            && dir.join("README.md").is_file()
            && dir.join("kustomization.yaml").is_file())
    {
        return Err(WriteError::NotOurs {
            path: dir.to_owned(),
        });
    }
    fs::create_dir_all(&parent).map_err(io_error(&parent))?;
    let staging = parent.join(format!(".{name}.zerohop-{}", std::process::id()));
    let result = write_into(set, &staging).and_then(|written| {
        let old = parent.join(format!(".{name}.zerohop-old-{}", std::process::id()));
        if dir.exists() {
            fs::rename(dir, &old).map_err(io_error(dir))?;
        }
        match fs::rename(&staging, dir) {
            Ok(()) => {
                if old.exists() {
                    fs::remove_dir_all(&old).map_err(io_error(&old))?;
                }
                Ok(written)
            }
            Err(source) => {
                // Put the previous output back rather than leave nothing.
                if old.exists() {
                    let _ = fs::rename(&old, dir);
                }
                Err(WriteError::Io {
                    path: dir.to_owned(),
                    source,
                })
            }
        }
    });
    if staging.exists() {
        let _ = fs::remove_dir_all(&staging);
    }
    result
}

fn write_into(set: &ManifestSet, staging: &Path) -> Result<Vec<String>, WriteError> {
    if staging.exists() {
        fs::remove_dir_all(staging).map_err(io_error(staging))?;
    }
    fs::create_dir(staging).map_err(io_error(staging))?;
    let mut written = Vec::new();
    for file in &set.files {
        let path = staging.join(&file.path);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).map_err(io_error(parent))?;
        }
        fs::write(&path, &file.contents).map_err(io_error(&path))?;
        if file.path.ends_with(".sh") {
            set_executable(&path)?;
        }
        written.push(file.path.clone());
    }
    Ok(written)
}

#[cfg(unix)]
fn set_executable(path: &Path) -> Result<(), WriteError> {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).map_err(io_error(path))
}

#[cfg(not(unix))]
fn set_executable(_path: &Path) -> Result<(), WriteError> {
    Ok(())
}
