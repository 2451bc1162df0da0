//! What a path is when it is not a regular file.

use std::fmt;
use std::fs::FileType;
use std::os::unix::fs::FileTypeExt;

/// A kind of file that is not a regular file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FileKind {
    /// A directory.
    Directory,
    /// A named pipe: opening it for reading waits for a writer.
    Fifo,
    /// A Unix domain socket.
    Socket,
    /// A character device (a terminal, `/dev/zero`): opening it runs its
    /// driver, reading it may never end.
    CharDevice,
    /// A block device (a disk).
    BlockDevice,
    /// A symbolic link, where it was not followed.
    Symlink,
    /// Anything else `stat(2)` can report.
    Other,
}

impl FileKind {
    /// The kind from the `st_mode` of `stat(2)`; `None` for a regular file.
    pub fn from_mode(mode: u32) -> Option<FileKind> {
        match mode & libc::S_IFMT {
            libc::S_IFREG => None,
            libc::S_IFDIR => Some(FileKind::Directory),
            libc::S_IFIFO => Some(FileKind::Fifo),
            libc::S_IFSOCK => Some(FileKind::Socket),
            libc::S_IFCHR => Some(FileKind::CharDevice),
            libc::S_IFBLK => Some(FileKind::BlockDevice),
            libc::S_IFLNK => Some(FileKind::Symlink),
            _ => Some(FileKind::Other),
        }
    }

    /// The kind of `file_type`; `None` for a regular file.
    pub fn of(file_type: FileType) -> Option<FileKind> {
        if file_type.is_file() {
            None
        } else if file_type.is_dir() {
            Some(FileKind::Directory)
        } else if file_type.is_fifo() {
            Some(FileKind::Fifo)
        } else if file_type.is_socket() {
            Some(FileKind::Socket)
        } else if file_type.is_char_device() {
            Some(FileKind::CharDevice)
        } else if file_type.is_block_device() {
            Some(FileKind::BlockDevice)
        } else if file_type.is_symlink() {
            Some(FileKind::Symlink)
        } else {
            Some(FileKind::Other)
        }
    }

    /// The kind without an article: `fifo`, `character device`.
    pub fn name(self) -> &'static str {
        match self {
            FileKind::Directory => "directory",
            FileKind::Fifo => "fifo",
            FileKind::Socket => "socket",
            FileKind::CharDevice => "character device",
            FileKind::BlockDevice => "block device",
            FileKind::Symlink => "symlink",
            FileKind::Other => "special file",
        }
    }

    /// The kind with its article, for messages: `a fifo`.
    pub fn described(self) -> &'static str {
        match self {
            FileKind::Directory => "a directory",
            FileKind::Fifo => "a fifo",
            FileKind::Socket => "a socket",
            FileKind::CharDevice => "a character device",
            FileKind::BlockDevice => "a block device",
            FileKind::Symlink => "a symlink",
            FileKind::Other => "a special file",
        }
    }
}

impl fmt::Display for FileKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.described())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_and_file_types_agree() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, "x").unwrap();
        for (path, expected) in [
            (dir.path(), Some(FileKind::Directory)),
            (file.as_path(), None),
            (
                std::path::Path::new("/dev/null"),
                Some(FileKind::CharDevice),
            ),
        ] {
            let meta = std::fs::metadata(path).unwrap();
            assert_eq!(FileKind::of(meta.file_type()), expected, "{path:?}");
            let mode = std::os::unix::fs::MetadataExt::mode(&meta);
            assert_eq!(FileKind::from_mode(mode), expected, "{path:?}");
        }
    }

    #[test]
    fn messages_name_the_kind_with_and_without_article() {
        assert_eq!(FileKind::Fifo.to_string(), "a fifo");
        assert_eq!(FileKind::CharDevice.name(), "character device");
    }
}
