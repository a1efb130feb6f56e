//! One process per data file. Two gateways (or a gateway and `stdio`, `acp` or `run --data`) on
//! the same file would each keep their own idea of every session's log, and diverge: so the
//! second one refuses to start, naming the file and the process that has it.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The exclusive lock on `<data>.lock`, which holds the owner's pid; held while it lives (the
/// system releases it when the process ends, however it ends).
#[derive(Debug)]
pub struct DataLock {
    _file: File,
}

/// Why a data file could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Another process holds it.
    #[error(
        "the data file {data} is in use by another airlock process{holder}; stop that one, or \
         give this one another --data"
    )]
    InUse {
        /// The data file.
        data: PathBuf,
        /// ` (pid N)` when the lock file says.
        holder: String,
    },
    /// The lock file could not be made or locked.
    #[error("cannot lock the data file {data} (through {lock}): {source}")]
    Io {
        /// The data file.
        data: PathBuf,
        /// Its lock file.
        lock: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
}

impl DataLock {
    /// Takes `data` for this process, or says which process has it. An in-memory store
    /// (`:memory:`) is the process's own: there is nothing to take.
    pub fn take(data: &Path) -> Result<Option<DataLock>, LockError> {
        if data == Path::new(airlock_store::MEMORY) {
            return Ok(None);
        }
        let mut lock = data.as_os_str().to_owned();
        lock.push(".lock");
        let lock = PathBuf::from(lock);
        let io = |source| LockError::Io { data: data.to_owned(), lock: lock.clone(), source };
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&lock)
            .map_err(io)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let pid = std::fs::read_to_string(&lock).unwrap_or_default();
                let holder = match pid.trim() {
                    "" => String::new(),
                    pid => format!(" (pid {pid})"),
                };
                return Err(LockError::InUse { data: data.to_owned(), holder });
            }
            Err(TryLockError::Error(source)) => return Err(io(source)),
        }
        file.set_len(0).and_then(|()| write!(file, "{}", std::process::id())).map_err(io)?;
        Ok(Some(DataLock { _file: file }))
    }
}
