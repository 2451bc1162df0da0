//! Opening the files zerohop is given: an intent, manifests, captures, a
//! kubeconfig, host files. Any of them can be a FIFO without a writer, a
//! terminal, `/dev/zero` or a file that never stops growing, and a tool
//! that runs in CI on pull requests or in a privileged container must not
//! wait on one nor read one without end.
//!
//! * [`FileKind`] names what a path is when it is not a regular file, the
//!   same way in every message.
//! * [`open_regular`] opens without waiting (`O_NONBLOCK`, `O_NOCTTY`) and
//!   refuses what the open descriptor says is not a regular file: the type
//!   is taken from what was opened, not from what the path named a moment
//!   before.
//! * [`read_capped`] reads at most one byte past a cap, so that an
//!   oversized input is recognised without being held.
//! * [`os_reason`] turns an operating-system error into the lowercase
//!   fragment messages use.

mod kind;
mod open;

pub use kind::FileKind;
pub use open::{Follow, NotRegular, open_regular, os_reason, read_capped, read_regular};
