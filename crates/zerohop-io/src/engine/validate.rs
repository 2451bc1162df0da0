//! The numbers of a configuration, checked before anything is opened.

use crate::config::{Amount, EngineKind, ReadConfig};
use crate::sink;
use crate::target::InputError;

/// Largest block size accepted.
const MAX_BLOCK_SIZE: u64 = 1 << 30;
/// Largest total buffer memory accepted.
const MAX_BUFFER_BYTES: u64 = 16 << 30;

/// Checks the numbers of a configuration.
pub fn validate(cfg: &ReadConfig) -> Result<(), InputError> {
    let range = |option, reason: &str| InputError::OutOfRange {
        option,
        reason: reason.to_owned(),
    };
    if cfg.paths.is_empty() {
        return Err(InputError::NoPaths);
    }
    if cfg.workers == 0 || cfg.workers > 1024 {
        return Err(range("--workers", "must be between 1 and 1024"));
    }
    if cfg.queue_depth == 0 || cfg.queue_depth > 4096 {
        return Err(range("--qd", "must be between 1 and 4096"));
    }
    if cfg.submit_batch == 0 || cfg.submit_batch > cfg.queue_depth {
        return Err(range(
            "--submit-batch",
            "must be between 1 (each read at once) and --qd (a full queue at once)",
        ));
    }
    if cfg.block_size == 0 || cfg.block_size > MAX_BLOCK_SIZE {
        return Err(range("--bs", "must be between 1 byte and 1 GiB"));
    }
    // A pread thread may need more than one slot; a ring has one per read.
    let per_thread = match cfg.engine {
        EngineKind::Pread => sink::spec(cfg.sink).slots_per_reader,
        EngineKind::Uring => 1,
    };
    let total = cfg.block_size * u64::from(cfg.queue_depth) * u64::from(cfg.workers) * per_thread;
    if total > MAX_BUFFER_BYTES {
        return Err(range(
            "--bs",
            &format!(
                "× --qd × --workers needs {total} bytes of buffers, more than the 16 GiB allowed; lower one of them"
            ),
        ));
    }
    match cfg.amount {
        Amount::Bytes(0) => return Err(range("--size", "must be more than 0")),
        Amount::Time(t) if t.is_zero() => return Err(range("--time", "must be more than 0")),
        _ => {}
    }
    if (cfg.iopoll || cfg.sqpoll) && cfg.engine == EngineKind::Pread {
        return Err(InputError::Conflict(
            "--sqpoll and --iopoll are io_uring options; use them with --engine uring".into(),
        ));
    }
    if cfg.iopoll && !cfg.direct {
        return Err(InputError::Conflict(
            "--iopoll needs --direct: io_uring polls for completions only on O_DIRECT reads".into(),
        ));
    }
    Ok(())
}
