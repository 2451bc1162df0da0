//! The process that reads a host, described once instead of guessed at
//! each fact.
//!
//! A few facts are not in a host's files but in the process that reads
//! them: the memlock limits and capabilities under `/proc/self` are the
//! reader's own, `CUFILE_ENV_PATH_JSON` is a variable of a process's
//! environment, and the kernel-log device and the probes reach the kernel
//! the process runs on. Whether they describe the host being judged
//! depends on where the process stands: on the host, beside a tree that
//! stands for one (a host mounted at `/host`, a capture), or nowhere near
//! it (a snapshot). A [`Process`] says which; every [`HostRoot`] carries
//! one, and those facts ask it.
//!
//! [`HostRoot`]: crate::HostRoot

/// The environment variable libcufile reads for another configuration
/// file: a variable of the reading process, so it is described here.
pub const CUFILE_ENV: &str = "CUFILE_ENV_PATH_JSON";

/// Where the process that reads a root stands relative to the host the
/// root shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Environment {
    /// On the host, reading it at `/`.
    Live,
    /// Beside a directory that stands for the host's `/`: the host's own
    /// `/` mounted at `/host` in a container, or an unpacked capture of
    /// any machine. Its kernel is the one this process runs on only when
    /// its boot id says so ([`HostRoot::shows_running_kernel`]).
    ///
    /// [`HostRoot::shows_running_kernel`]: crate::HostRoot::shows_running_kernel
    Directory,
    /// Nowhere near it: a snapshot answers with what its recording read.
    Snapshot {
        /// Whether the recording ran on the live host, so that
        /// `/proc/self` in it is the recording zerohop process.
        recorded_live: bool,
    },
}

/// The process that reads a root, as the facts that depend on it need to
/// know it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Process {
    environment: Environment,
    /// `CUFILE_ENV_PATH_JSON` as this process was started with it.
    cufile_env_path: Option<String>,
}

impl Process {
    /// This process, on the live host, with the environment it was
    /// started with: the one place the host layer reads its environment.
    pub fn current() -> Process {
        Process::live(std::env::var(CUFILE_ENV).ok())
    }

    /// A process on the live host started with `CUFILE_ENV_PATH_JSON` set
    /// to `cufile_env_path`. Only an absolute path is kept: libcufile
    /// opens the variable's value as given, so a relative one depends on
    /// the working directory of each program and names no one file.
    pub fn live(cufile_env_path: Option<String>) -> Process {
        Process {
            environment: Environment::Live,
            cufile_env_path: cufile_env_path.filter(|path| path.starts_with('/')),
        }
    }

    /// A process beside a directory tree: nothing of its own applies.
    pub(crate) fn directory() -> Process {
        Process {
            environment: Environment::Directory,
            cufile_env_path: None,
        }
    }

    /// A process reading a snapshot recorded on the live host or not.
    pub(crate) fn snapshot(recorded_live: bool) -> Process {
        Process {
            environment: Environment::Snapshot { recorded_live },
            cufile_env_path: None,
        }
    }

    /// Where it stands.
    pub fn environment(&self) -> Environment {
        self.environment
    }

    /// Whether it runs on the host it reads: its probes, its kernel's log
    /// device and its environment describe that host.
    pub fn is_live(&self) -> bool {
        self.environment == Environment::Live
    }

    /// Whether the root's `/proc/self` is a zerohop process on the host
    /// being judged, so that its `limits` and the capabilities of its
    /// `status` say what a data-path reader started like it gets: on the
    /// live host, and in a snapshot recorded there.
    pub fn reads_own_limits(&self) -> bool {
        matches!(
            self.environment,
            Environment::Live
                | Environment::Snapshot {
                    recorded_live: true
                }
        )
    }

    /// The `cufile.json` that `CUFILE_ENV_PATH_JSON` names for programs
    /// started like this process, when it runs on the host and has one.
    pub fn cufile_env_path(&self) -> Option<&str> {
        self.cufile_env_path.as_deref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_absolute_cufile_path_is_kept() {
        let process = Process::live(Some("/etc/gds/cufile.json".to_owned()));
        assert_eq!(process.cufile_env_path(), Some("/etc/gds/cufile.json"));
        assert_eq!(
            Process::live(Some("cufile.json".to_owned())).cufile_env_path(),
            None
        );
    }

    #[test]
    fn only_the_live_host_and_its_snapshots_read_their_own_limits() {
        assert!(Process::live(None).reads_own_limits());
        assert!(Process::snapshot(true).reads_own_limits());
        assert!(!Process::snapshot(false).reads_own_limits());
        assert!(!Process::directory().reads_own_limits());
        assert!(!Process::snapshot(true).is_live());
    }
}
