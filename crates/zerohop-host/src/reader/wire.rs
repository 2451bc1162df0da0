//! The messages between a process and its reader processes: length-framed,
//! little-endian, and checked field by field when read back, so that a
//! reader that misbehaves gives an error rather than a wrong answer.

use std::io::{self, Read, Write};

use crate::kmsg_device::KmsgRead;
use crate::read_error::{FileKind, IoKind, ReadError};
use crate::tree::Tail;

/// The largest message either side accepts: a file read at the largest cap
/// a caller asks for (the snapshot's 64 MiB), with room for its framing.
pub(crate) const MAX_MESSAGE: usize = (64 << 20) + (1 << 20);

/// Writes one framed message.
pub(crate) fn send(out: &mut impl Write, message: &[u8]) -> io::Result<()> {
    let len = u32::try_from(message.len())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "message too large"))?;
    let mut framed = Vec::with_capacity(4 + message.len());
    framed.extend_from_slice(&len.to_le_bytes());
    framed.extend_from_slice(message);
    out.write_all(&framed)
}

/// Reads one framed message; `None` at the end of the stream.
pub(crate) fn receive(input: &mut impl Read) -> io::Result<Option<Vec<u8>>> {
    let mut len = [0u8; 4];
    match input.read_exact(&mut len) {
        Ok(()) => {}
        Err(err) if err.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(err) => return Err(err),
    }
    let len = u32::from_le_bytes(len) as usize;
    if len > MAX_MESSAGE {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "message too large",
        ));
    }
    let mut message = vec![0; len];
    input.read_exact(&mut message)?;
    Ok(Some(message))
}

/// Builds a message.
#[derive(Default)]
pub(crate) struct Writer {
    bytes: Vec<u8>,
}

impl Writer {
    pub(crate) fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }

    pub(crate) fn u8(&mut self, value: u8) -> &mut Writer {
        self.bytes.push(value);
        self
    }

    pub(crate) fn bool(&mut self, value: bool) -> &mut Writer {
        self.u8(u8::from(value))
    }

    pub(crate) fn u64(&mut self, value: u64) -> &mut Writer {
        self.bytes.extend_from_slice(&value.to_le_bytes());
        self
    }

    pub(crate) fn bytes(&mut self, value: &[u8]) -> &mut Writer {
        self.u64(value.len() as u64);
        self.bytes.extend_from_slice(value);
        self
    }

    pub(crate) fn str(&mut self, value: &str) -> &mut Writer {
        self.bytes(value.as_bytes())
    }

    pub(crate) fn opt_str(&mut self, value: Option<&str>) -> &mut Writer {
        match value {
            Some(text) => self.u8(1).str(text),
            None => self.u8(0),
        }
    }

    pub(crate) fn strings(&mut self, values: &[String]) -> &mut Writer {
        self.u64(values.len() as u64);
        for value in values {
            self.str(value);
        }
        self
    }

    pub(crate) fn tail(&mut self, tail: &Tail) -> &mut Writer {
        self.bytes(&tail.bytes).u64(tail.skipped)
    }

    pub(crate) fn kmsg(&mut self, read: &KmsgRead) -> &mut Writer {
        self.str(&read.path)
            .str(&read.text)
            .bool(read.overrun)
            .opt_str(read.cut.as_deref())
    }

    /// An error, or `Ok` followed by what `ok` writes.
    pub(crate) fn result<T>(
        &mut self,
        result: &Result<T, ReadError>,
        ok: impl FnOnce(&mut Writer, &T),
    ) -> &mut Writer {
        match result {
            Ok(value) => {
                self.u8(0);
                ok(self, value);
            }
            Err(err) => {
                self.u8(1).error(err);
            }
        }
        self
    }

    /// `None`, or `Some` followed by what `some` writes.
    pub(crate) fn option<T>(
        &mut self,
        value: &Option<T>,
        some: impl FnOnce(&mut Writer, &T),
    ) -> &mut Writer {
        match value {
            Some(value) => {
                self.u8(1);
                some(self, value);
            }
            None => {
                self.u8(0);
            }
        }
        self
    }

    fn error(&mut self, err: &ReadError) -> &mut Writer {
        match err {
            ReadError::TooLarge { path, cap } => self.u8(0).str(path).u64(*cap as u64),
            ReadError::TooManyEntries { path, cap } => self.u8(1).str(path).u64(*cap as u64),
            ReadError::NotText { path } => self.u8(2).str(path),
            ReadError::NotAFile { path, kind } => self.u8(3).str(path).u8(file_kind_code(*kind)),
            ReadError::Timeout { path, seconds } => self.u8(4).str(path).u64(seconds.to_bits()),
            ReadError::GaveUp { path, stuck } => self.u8(5).str(path).u64(*stuck as u64),
            ReadError::SymlinkLoop { path } => self.u8(6).str(path),
            ReadError::NotRecorded { path } => self.u8(7).str(path),
            ReadError::Withheld { path } => self.u8(8).str(path),
            ReadError::Io {
                path,
                kind,
                message,
            } => self.u8(9).str(path).u8(io_kind_code(*kind)).str(message),
        }
    }
}

/// Reads a message back; every method fails on a message that ends early
/// or holds a value out of range.
pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
}

/// A message that is not what the other side should have sent.
#[derive(Debug)]
pub(crate) struct Malformed;

impl<'a> Reader<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Reader<'a> {
        Reader { bytes }
    }

    /// Fails unless the whole message was read.
    pub(crate) fn end(&self) -> Result<(), Malformed> {
        if self.bytes.is_empty() {
            Ok(())
        } else {
            Err(Malformed)
        }
    }

    fn take(&mut self, len: usize) -> Result<&'a [u8], Malformed> {
        if self.bytes.len() < len {
            return Err(Malformed);
        }
        let (head, rest) = self.bytes.split_at(len);
        self.bytes = rest;
        Ok(head)
    }

    pub(crate) fn u8(&mut self) -> Result<u8, Malformed> {
        Ok(self.take(1)?[0])
    }

    pub(crate) fn bool(&mut self) -> Result<bool, Malformed> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(Malformed),
        }
    }

    pub(crate) fn u64(&mut self) -> Result<u64, Malformed> {
        let bytes = self.take(8)?;
        Ok(u64::from_le_bytes(bytes.try_into().map_err(|_| Malformed)?))
    }

    fn usize(&mut self) -> Result<usize, Malformed> {
        usize::try_from(self.u64()?).map_err(|_| Malformed)
    }

    pub(crate) fn bytes(&mut self) -> Result<Vec<u8>, Malformed> {
        let len = self.usize()?;
        Ok(self.take(len)?.to_vec())
    }

    pub(crate) fn str(&mut self) -> Result<String, Malformed> {
        String::from_utf8(self.bytes()?).map_err(|_| Malformed)
    }

    pub(crate) fn opt_str(&mut self) -> Result<Option<String>, Malformed> {
        self.option(Reader::str)
    }

    pub(crate) fn strings(&mut self) -> Result<Vec<String>, Malformed> {
        let count = self.usize()?;
        // Each string takes at least its 8-byte length: a count larger than
        // what is left cannot be honest, and must not size an allocation.
        if count > self.bytes.len() / 8 {
            return Err(Malformed);
        }
        (0..count).map(|_| self.str()).collect()
    }

    pub(crate) fn tail(&mut self) -> Result<Tail, Malformed> {
        Ok(Tail {
            bytes: self.bytes()?,
            skipped: self.u64()?,
        })
    }

    pub(crate) fn kmsg(&mut self) -> Result<KmsgRead, Malformed> {
        Ok(KmsgRead {
            path: self.str()?,
            text: self.str()?,
            overrun: self.bool()?,
            cut: self.opt_str()?,
        })
    }

    pub(crate) fn result<T>(
        &mut self,
        ok: impl FnOnce(&mut Reader<'a>) -> Result<T, Malformed>,
    ) -> Result<Result<T, ReadError>, Malformed> {
        match self.u8()? {
            0 => Ok(Ok(ok(self)?)),
            1 => Ok(Err(self.error()?)),
            _ => Err(Malformed),
        }
    }

    pub(crate) fn option<T>(
        &mut self,
        some: impl FnOnce(&mut Reader<'a>) -> Result<T, Malformed>,
    ) -> Result<Option<T>, Malformed> {
        match self.u8()? {
            0 => Ok(None),
            1 => Ok(Some(some(self)?)),
            _ => Err(Malformed),
        }
    }

    fn error(&mut self) -> Result<ReadError, Malformed> {
        Ok(match self.u8()? {
            0 => ReadError::TooLarge {
                path: self.str()?,
                cap: self.usize()?,
            },
            1 => ReadError::TooManyEntries {
                path: self.str()?,
                cap: self.usize()?,
            },
            2 => ReadError::NotText { path: self.str()? },
            3 => ReadError::NotAFile {
                path: self.str()?,
                kind: file_kind(self.u8()?)?,
            },
            4 => ReadError::Timeout {
                path: self.str()?,
                seconds: f64::from_bits(self.u64()?),
            },
            5 => ReadError::GaveUp {
                path: self.str()?,
                stuck: self.usize()?,
            },
            6 => ReadError::SymlinkLoop { path: self.str()? },
            7 => ReadError::NotRecorded { path: self.str()? },
            8 => ReadError::Withheld { path: self.str()? },
            9 => ReadError::Io {
                path: self.str()?,
                kind: io_kind(self.u8()?)?,
                message: self.str()?,
            },
            _ => return Err(Malformed),
        })
    }
}

const FILE_KINDS: [FileKind; 7] = [
    FileKind::Directory,
    FileKind::Fifo,
    FileKind::Socket,
    FileKind::CharDevice,
    FileKind::BlockDevice,
    FileKind::Symlink,
    FileKind::Other,
];

const IO_KINDS: [IoKind; 6] = [
    IoKind::PermissionDenied,
    IoKind::InvalidInput,
    IoKind::Unsupported,
    IoKind::Busy,
    IoKind::TimedOut,
    IoKind::Other,
];

fn file_kind_code(kind: FileKind) -> u8 {
    FILE_KINDS.iter().position(|k| *k == kind).unwrap_or(6) as u8
}

fn file_kind(code: u8) -> Result<FileKind, Malformed> {
    FILE_KINDS.get(usize::from(code)).copied().ok_or(Malformed)
}

fn io_kind_code(kind: IoKind) -> u8 {
    IO_KINDS.iter().position(|k| *k == kind).unwrap_or(5) as u8
}

fn io_kind(code: u8) -> Result<IoKind, Malformed> {
    IO_KINDS.get(usize::from(code)).copied().ok_or(Malformed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(err: ReadError) {
        let mut writer = Writer::default();
        writer.result::<()>(&Err(err.clone()), |_, _| {});
        let bytes = writer.into_bytes();
        let mut reader = Reader::new(&bytes);
        assert_eq!(reader.result(|_| Ok(())).unwrap(), Err(err));
        reader.end().unwrap();
    }

    #[test]
    fn every_error_comes_back_as_it_went() {
        let path = "/sys/x".to_owned();
        round_trip(ReadError::TooLarge {
            path: path.clone(),
            cap: 7,
        });
        round_trip(ReadError::TooManyEntries {
            path: path.clone(),
            cap: 9,
        });
        round_trip(ReadError::NotText { path: path.clone() });
        for kind in FILE_KINDS {
            round_trip(ReadError::NotAFile {
                path: path.clone(),
                kind,
            });
        }
        round_trip(ReadError::Timeout {
            path: path.clone(),
            seconds: 2.5,
        });
        round_trip(ReadError::GaveUp {
            path: path.clone(),
            stuck: 16,
        });
        round_trip(ReadError::SymlinkLoop { path: path.clone() });
        round_trip(ReadError::NotRecorded { path: path.clone() });
        round_trip(ReadError::Withheld { path: path.clone() });
        for kind in IO_KINDS {
            round_trip(ReadError::Io {
                path: path.clone(),
                kind,
                message: "permission denied".to_owned(),
            });
        }
    }

    #[test]
    fn a_truncated_or_lying_message_is_malformed() {
        let mut writer = Writer::default();
        writer.strings(&["a".to_owned(), "bc".to_owned()]);
        let bytes = writer.into_bytes();
        for len in 0..bytes.len() {
            assert!(Reader::new(&bytes[..len]).strings().is_err(), "{len}");
        }
        assert_eq!(Reader::new(&bytes).strings().unwrap(), ["a", "bc"]);
        // A count of strings far beyond the message allocates nothing.
        let mut lying = Writer::default();
        lying.u64(u64::MAX);
        assert!(Reader::new(&lying.into_bytes()).strings().is_err());
        let mut huge = Writer::default();
        huge.u64(u64::MAX);
        assert!(Reader::new(&huge.into_bytes()).bytes().is_err());
    }

    #[test]
    fn frames_refuse_an_oversized_length() {
        let mut stream = Vec::new();
        send(&mut stream, b"hello").unwrap();
        let mut input = &stream[..];
        assert_eq!(receive(&mut input).unwrap().as_deref(), Some(&b"hello"[..]));
        assert_eq!(receive(&mut input).unwrap(), None);
        let oversized = ((MAX_MESSAGE + 1) as u32).to_le_bytes();
        assert!(receive(&mut &oversized[..]).is_err());
    }
}
