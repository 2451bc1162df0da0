//! Opening and reading without waiting and without end.

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

use rustix::fs::{Mode, OFlags};

use crate::kind::FileKind;

/// Whether a symbolic link in the last component of a path is followed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Follow {
    /// Follow it: the user named the path.
    Links,
    /// Refuse it (`ELOOP`): the path was resolved already, and a link
    /// swapped in since must not be read.
    NoLinks,
}

/// Why a file was not opened or read.
#[derive(Debug)]
pub enum NotRegular {
    /// It is not a regular file; nothing was read from it.
    Kind(FileKind),
    /// Opening or reading failed.
    Io(io::Error),
}

/// Opens `path` for reading without waiting: a FIFO without a writer and
/// a terminal open at once (`O_NONBLOCK`), a terminal does not become the
/// controlling one (`O_NOCTTY`), and then anything the open descriptor says
/// is not a regular file is refused. The descriptor is left non-blocking,
/// which changes nothing for a regular file.
///
/// # Errors
/// [`NotRegular::Kind`] for a directory, FIFO, socket or device;
/// [`NotRegular::Io`] when the open or `fstat` fails.
pub fn open_regular(path: &Path, follow: Follow) -> Result<File, NotRegular> {
    let mut flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
    if follow == Follow::NoLinks {
        flags |= OFlags::NOFOLLOW;
    }
    let file = File::from(
        rustix::fs::open(path, flags, Mode::empty())
            .map_err(|errno| NotRegular::Io(io::Error::from(errno)))?,
    );
    let file_type = file.metadata().map_err(NotRegular::Io)?.file_type();
    match FileKind::of(file_type) {
        None => Ok(file),
        Some(kind) => Err(NotRegular::Kind(kind)),
    }
}

/// Reads at most `cap` bytes and one more from `reader`: a result longer
/// than `cap` says the input is too large without all of it being read or
/// held, however it grows (a `/proc` file whose size reads as 0 included).
///
/// # Errors
/// The read's error.
pub fn read_capped(reader: impl Read, cap: usize) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    let limit = u64::try_from(cap).unwrap_or(u64::MAX).saturating_add(1);
    reader.take(limit).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// [`open_regular`] then [`read_capped`]: at most `cap` bytes and one more
/// of the regular file at `path`.
///
/// # Errors
/// As [`open_regular`]; a failed read is [`NotRegular::Io`].
pub fn read_regular(path: &Path, follow: Follow, cap: usize) -> Result<Vec<u8>, NotRegular> {
    let file = open_regular(path, follow)?;
    read_capped(file, cap).map_err(NotRegular::Io)
}

/// The operating system's message without its `(os error N)` suffix and
/// starting lowercase, as messages are written: `permission denied`.
pub fn os_reason(err: &io::Error) -> String {
    let text = err.to_string();
    let text = match text.find(" (os error ") {
        Some(index) => &text[..index],
        None => &text,
    };
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => "unknown error".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;
    use std::sync::mpsc;
    use std::thread;
    use std::time::Duration;

    use super::*;

    /// Runs `work` on a thread and fails the test if it does not return in
    /// ten seconds: a hang must fail, not stall the suite.
    fn within<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> T {
        let (send, receive) = mpsc::channel();
        thread::spawn(move || send.send(work()));
        receive
            .recv_timeout(Duration::from_secs(10))
            .expect("finished without waiting")
    }

    #[test]
    fn a_fifo_is_refused_not_waited_on() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let result = within(move || read_regular(&fifo, Follow::Links, 16));
        assert!(
            matches!(result, Err(NotRegular::Kind(FileKind::Fifo))),
            "{result:?}"
        );
    }

    #[test]
    fn an_endless_device_is_refused_not_read() {
        let result = within(|| read_regular(Path::new("/dev/zero"), Follow::Links, 16));
        assert!(
            matches!(result, Err(NotRegular::Kind(FileKind::CharDevice))),
            "{result:?}"
        );
    }

    #[test]
    fn a_directory_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let result = read_regular(dir.path(), Follow::Links, 16);
        assert!(
            matches!(result, Err(NotRegular::Kind(FileKind::Directory))),
            "{result:?}"
        );
    }

    #[test]
    fn reads_stop_one_byte_past_the_cap() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("big");
        std::fs::write(&file, vec![b'x'; 100]).unwrap();
        assert_eq!(read_regular(&file, Follow::Links, 10).unwrap().len(), 11);
        assert_eq!(read_regular(&file, Follow::Links, 100).unwrap().len(), 100);
        assert_eq!(
            read_capped(io::repeat(0), 1 << 20).unwrap().len(),
            (1 << 20) + 1
        );
    }

    #[test]
    fn a_link_is_followed_only_when_asked() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("file");
        std::fs::write(&file, "text").unwrap();
        let link = dir.path().join("link");
        symlink(&file, &link).unwrap();
        assert_eq!(read_regular(&link, Follow::Links, 16).unwrap(), b"text");
        assert!(matches!(
            read_regular(&link, Follow::NoLinks, 16),
            Err(NotRegular::Io(_))
        ));
    }

    #[test]
    fn os_reasons_are_lowercase_fragments() {
        let denied = io::Error::from_raw_os_error(libc::EACCES);
        assert_eq!(os_reason(&denied), "permission denied");
        assert_eq!(os_reason(&io::Error::other("Odd")), "odd");
    }
}
