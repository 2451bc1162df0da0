//! What a process asks its reader, and how the reader answers: one
//! operation of [`Tree`] on one path, its result sent back as the
//! operation returned it.

use std::cell::RefCell;
use std::path::Path;
use std::time::Duration;

use crate::kmsg_device;
use crate::read_error::{ReadError, RootError};
use crate::reader::wire::{Malformed, Reader, Writer};
use crate::tree::{Tree, open_tree};

/// One operation on a tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    /// Whether the base is a directory, and whether it is the live `/`.
    Open,
    /// [`Tree::read_direct`] with a cap.
    ReadDirect { cap: u64 },
    /// [`Tree::read_tail`] with a cap.
    ReadTail { cap: u64 },
    /// [`Tree::list`].
    List,
    /// [`Tree::read_link`].
    ReadLink,
    /// [`Tree::canonical`].
    Canonical,
    /// [`Tree::exists`].
    Exists,
    /// [`Tree::pseudo_file_system`].
    PseudoFileSystem,
    /// `kmsg_device::read`.
    Kmsg {
        since_usec: u64,
        budget_usec: u64,
        beside: bool,
    },
}

/// One request: an operation on `path` of the tree under `base` that the
/// process knows as `tree` (a new number for each pass, so that the reader
/// keeps nothing it learnt about the tree from one pass to the next).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Request<'a> {
    pub(crate) op: Op,
    pub(crate) tree: u64,
    pub(crate) live: bool,
    pub(crate) base: &'a str,
    pub(crate) path: &'a str,
}

/// What [`Op::Open`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Opened {
    Live,
    Directory,
    Missing,
    NotADirectory,
}

impl Request<'_> {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Writer::default();
        match self.op {
            Op::Open => out.u8(0),
            Op::ReadDirect { cap } => out.u8(1).u64(cap),
            Op::ReadTail { cap } => out.u8(2).u64(cap),
            Op::List => out.u8(3),
            Op::ReadLink => out.u8(4),
            Op::Canonical => out.u8(5),
            Op::Exists => out.u8(6),
            Op::PseudoFileSystem => out.u8(7),
            Op::Kmsg {
                since_usec,
                budget_usec,
                beside,
            } => out.u8(8).u64(since_usec).u64(budget_usec).bool(beside),
        };
        out.u64(self.tree)
            .bool(self.live)
            .str(self.base)
            .str(self.path);
        out.into_bytes()
    }
}

/// A request as the reader receives it, owning its strings.
pub(crate) struct Received {
    op: Op,
    tree: u64,
    live: bool,
    base: String,
    path: String,
}

impl Received {
    pub(crate) fn decode(bytes: &[u8]) -> Result<Received, Malformed> {
        let mut input = Reader::new(bytes);
        let op = match input.u8()? {
            0 => Op::Open,
            1 => Op::ReadDirect { cap: input.u64()? },
            2 => Op::ReadTail { cap: input.u64()? },
            3 => Op::List,
            4 => Op::ReadLink,
            5 => Op::Canonical,
            6 => Op::Exists,
            7 => Op::PseudoFileSystem,
            8 => Op::Kmsg {
                since_usec: input.u64()?,
                budget_usec: input.u64()?,
                beside: input.bool()?,
            },
            _ => return Err(Malformed),
        };
        let received = Received {
            op,
            tree: input.u64()?,
            live: input.bool()?,
            base: input.str()?,
            path: input.str()?,
        };
        input.end()?;
        Ok(received)
    }

    /// Runs the request and encodes its answer. `trees` keeps the tree of
    /// the last request, for the next request of the same pass.
    pub(crate) fn answer(&self, trees: &RefCell<Option<(u64, Tree)>>) -> Vec<u8> {
        let mut out = Writer::default();
        if self.op == Op::Open {
            let opened = match open_tree(Path::new(&self.base)) {
                Ok(tree) if tree.is_live() => Opened::Live,
                Ok(_) => Opened::Directory,
                Err(RootError::NotADirectory(_)) => Opened::NotADirectory,
                Err(_) => Opened::Missing,
            };
            out.u8(opened as u8);
            return out.into_bytes();
        }
        let mut cached = trees.borrow_mut();
        if cached.as_ref().is_none_or(|(id, _)| *id != self.tree) {
            let tree = if self.live {
                Tree::live()
            } else {
                Tree::at(Path::new(&self.base))
            };
            *cached = Some((self.tree, tree));
        }
        let Some((_, tree)) = cached.as_ref() else {
            unreachable!("a tree was just kept");
        };
        let path = self.path.as_str();
        match self.op {
            Op::Open => {}
            Op::ReadDirect { cap } => {
                out.result(&tree.read_direct(path, clamp(cap)), |out, read| {
                    out.option(read, |out, (bytes, direct)| {
                        out.bytes(bytes).bool(*direct);
                    });
                });
            }
            Op::ReadTail { cap } => {
                out.result(&tree.read_tail(path, clamp(cap)), |out, tail| {
                    out.option(tail, |out, tail| {
                        out.tail(tail);
                    });
                });
            }
            Op::List => {
                out.result(&tree.list(path), |out, names| {
                    out.option(names, |out, names| {
                        out.strings(names);
                    });
                });
            }
            Op::ReadLink => {
                out.result(&tree.read_link(path), |out, target| {
                    out.opt_str(target.as_deref());
                });
            }
            Op::Canonical => {
                out.result(&tree.canonical(path), |out, real| {
                    out.opt_str(real.as_deref());
                });
            }
            Op::Exists => {
                out.result(&tree.exists(path), |out, found| {
                    out.bool(*found);
                });
            }
            Op::PseudoFileSystem => {
                out.opt_str(tree.pseudo_file_system());
            }
            Op::Kmsg {
                since_usec,
                budget_usec,
                beside,
            } => {
                let base = beside.then(|| tree.base());
                let budget = Duration::from_micros(budget_usec);
                let read: Result<_, ReadError> = kmsg_device::read(base, since_usec, budget);
                out.result(&read, |out, read| {
                    out.option(read, |out, read| {
                        out.kmsg(read);
                    });
                });
            }
        }
        out.into_bytes()
    }
}

/// A cap as this process's memory allows: a cap past what a message
/// carries fails the read as too large instead of the message.
fn clamp(cap: u64) -> usize {
    usize::try_from(cap).unwrap_or(usize::MAX)
}

impl Opened {
    pub(crate) fn decode(input: &mut Reader<'_>) -> Result<Opened, Malformed> {
        Ok(match input.u8()? {
            0 => Opened::Live,
            1 => Opened::Directory,
            2 => Opened::Missing,
            3 => Opened::NotADirectory,
            _ => return Err(Malformed),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_arrives_as_it_was_sent() {
        let ops = [
            Op::Open,
            Op::ReadDirect { cap: 4096 },
            Op::ReadTail { cap: 1 },
            Op::List,
            Op::ReadLink,
            Op::Canonical,
            Op::Exists,
            Op::PseudoFileSystem,
            Op::Kmsg {
                since_usec: 7,
                budget_usec: 1_000_000,
                beside: true,
            },
        ];
        for op in ops {
            let request = Request {
                op,
                tree: 3,
                live: false,
                base: "/host",
                path: "/sys/bus/pci/devices",
            };
            let received = Received::decode(&request.encode()).unwrap();
            assert_eq!(received.op, op);
            assert_eq!(received.tree, 3);
            assert!(!received.live);
            assert_eq!(received.base, "/host");
            assert_eq!(received.path, "/sys/bus/pci/devices");
        }
        let mut bytes = Request {
            op: Op::List,
            tree: 1,
            live: true,
            base: "/",
            path: "/proc",
        }
        .encode();
        bytes.push(0);
        assert!(Received::decode(&bytes).is_err(), "trailing bytes");
        assert!(Received::decode(&[9]).is_err(), "unknown operation");
    }
}
