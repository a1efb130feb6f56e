//! A session's workspace: the directory its code tools (the `python` plugin, ...) see as
//! `/workspace`, read-write, surviving between calls and restarts; the files a client lists,
//! downloads and uploads (`/v1/sessions/{id}/files`).
//!
//! Every session of a tenant has its own directory under the tenant's, and a tenant's
//! workspaces together hold at most [`Workspaces`]' quota. A file is charged its size rounded up
//! to 4 KiB, and a directory or a link 4 KiB, so a million empty files fill a quota too.
//!
//! Paths are relative to the workspace (`out/plot.png`) and resolved inside it only: an
//! absolute path, `..`, or a symbolic link leading out of it is refused (the directory is
//! opened with cap-std, whose lookups cannot leave it), so code that planted a link to `/etc`
//! cannot make a download read there.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use cap_std::ambient_authority;
use cap_std::fs::Dir;

/// What one entry is charged: its size rounded up to 4 KiB, and at least 4 KiB.
const BLOCK: u64 = 4096;
/// The longest path taken, in bytes.
const PATH_MOST: usize = 1024;

/// Where workspaces live, and what a tenant's may hold.
#[derive(Clone, Debug)]
pub struct Workspaces {
    root: PathBuf,
    tenant_bytes: u64,
}

impl Workspaces {
    /// Workspaces under `root`, each tenant's together holding at most `tenant_bytes`.
    pub fn new(root: PathBuf, tenant_bytes: u64) -> Workspaces {
        Workspaces { root, tenant_bytes }
    }

    /// The directory they live under.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The workspace of `session_id` of `tenant` (none: sessions made without a key). Its
    /// directory is made when something is first written.
    pub fn of(&self, tenant: Option<&str>, session_id: &str) -> Workspace {
        // A tenant may be named `..`: prefixed, every name is a plain file name.
        let tenant_dir = self.root.join(match tenant {
            Some(tenant) => format!("t-{tenant}"),
            None => "local".to_owned(),
        });
        Workspace {
            dir: tenant_dir.join(format!("s-{session_id}")),
            tenant_dir,
            quota: self.tenant_bytes,
        }
    }
}

/// One session's workspace.
#[derive(Clone, Debug, PartialEq)]
pub struct Workspace {
    dir: PathBuf,
    tenant_dir: PathBuf,
    quota: u64,
}

/// A file in a workspace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkspaceFile {
    /// Its path relative to the workspace, `/`-separated.
    pub path: String,
    /// Its size.
    pub bytes: u64,
    /// When it was last changed, in milliseconds since the Unix epoch.
    pub modified_ms: u64,
}

/// What a workspace holds.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Scan {
    /// Its files (regular files; not directories or links), by path.
    pub files: BTreeMap<String, WorkspaceFile>,
    /// What it is charged against the quota.
    pub charged: u64,
}

impl Scan {
    fn add(&mut self, path: &str, metadata: &cap_std::fs::Metadata) {
        self.charged += charge(metadata);
        if metadata.is_file() {
            let file = WorkspaceFile {
                path: path.to_owned(),
                bytes: metadata.len(),
                modified_ms: modified_ms(metadata),
            };
            self.files.insert(path.to_owned(), file);
        }
    }

    /// The files of `self` that `before` did not have, or had with another size or time.
    pub fn changed_since(&self, before: &Scan) -> Vec<&WorkspaceFile> {
        self.files.values().filter(|file| before.files.get(&file.path) != Some(*file)).collect()
    }
}

/// Why a workspace operation failed; the message says what to do.
#[derive(Debug, thiserror::Error)]
pub enum WorkspaceError {
    /// The path is not one a workspace takes.
    #[error(
        "the path {0:?} is not a file path inside the workspace: use `/`-separated names relative to it (e.g. `data/input.csv`), without `.`, `..` or an empty name, at most {PATH_MOST} bytes"
    )]
    BadPath(String),
    /// Nothing (or not a regular file) at the path.
    #[error("the workspace has no file {0:?}; GET …/files lists what it has")]
    NotFound(String),
    /// The write would take the tenant's workspaces past their quota.
    #[error(
        "the workspace quota is {quota} bytes for all of a tenant's sessions, {used} are used and this needs {wanted} more; remove files (DELETE …/files/PATH, or dispose of sessions) first"
    )]
    Full {
        /// The quota.
        quota: u64,
        /// What the tenant's workspaces are charged now.
        used: u64,
        /// What the write would add.
        wanted: u64,
    },
    /// The file system failed.
    #[error("the workspace could not be read or written: {0}")]
    Io(#[from] io::Error),
}

impl Workspace {
    /// Its directory on the host.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// What all the tenant's workspaces may hold together, in bytes.
    pub fn quota(&self) -> u64 {
        self.quota
    }

    /// Makes its directory if it is not there.
    pub fn ensure(&self) -> io::Result<()> {
        std::fs::create_dir_all(&self.dir)
    }

    /// What it holds (nothing, if it was never written).
    pub fn scan(&self) -> io::Result<Scan> {
        let mut scan = Scan::default();
        if let Some(dir) = open(&self.dir)? {
            walk(&dir, "", &mut |path, metadata| scan.add(path, metadata))?;
        }
        Ok(scan)
    }

    /// What it holds, and what all the tenant's workspaces are charged together (this one's
    /// directory and contents included), in one walk.
    pub fn scan_with_tenant(&self) -> io::Result<(Scan, u64)> {
        let (mut scan, mut charged) = (Scan::default(), 0);
        let own =
            self.dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        if let Some(dir) = open(&self.tenant_dir)? {
            walk(&dir, "", &mut |path, metadata| {
                charged += charge(metadata);
                let inside = path.strip_prefix(own.as_str()).and_then(|p| p.strip_prefix('/'));
                if let Some(inside) = inside {
                    scan.add(inside, metadata);
                }
            })?;
        }
        Ok((scan, charged))
    }

    /// What all the tenant's workspaces are charged together.
    pub fn tenant_charged(&self) -> io::Result<u64> {
        let mut charged = 0;
        if let Some(dir) = open(&self.tenant_dir)? {
            walk(&dir, "", &mut |_, metadata| charged += charge(metadata))?;
        }
        Ok(charged)
    }

    /// Opens the file at `path` for reading, with its size.
    pub fn open_file(&self, path: &str) -> Result<(std::fs::File, u64), WorkspaceError> {
        let relative = checked(path)?;
        let missing = || WorkspaceError::NotFound(path.to_owned());
        let dir = open(&self.dir)?.ok_or_else(missing)?;
        let file = dir.open(relative).map_err(|e| not_found_or(e, path))?;
        let metadata = file.metadata()?;
        if !metadata.is_file() {
            return Err(missing());
        }
        Ok((file.into_std(), metadata.len()))
    }

    /// The bytes of the file at `path`.
    pub fn read(&self, path: &str) -> Result<Vec<u8>, WorkspaceError> {
        let (mut file, bytes) = self.open_file(path)?;
        let mut read = Vec::with_capacity(bytes as usize);
        io::Read::read_to_end(&mut file, &mut read)?;
        Ok(read)
    }

    /// The names in the directory at `path` (`""`: the workspace itself), in name order, a
    /// directory's ending with `/`.
    pub fn list_dir(&self, path: &str) -> Result<Vec<String>, WorkspaceError> {
        let missing = || WorkspaceError::NotFound(path.to_owned());
        let Some(root) = open(&self.dir)? else {
            return if path.is_empty() { Ok(Vec::new()) } else { Err(missing()) };
        };
        let dir = match path {
            "" => root,
            path => root.open_dir(checked(path)?).map_err(|e| not_found_or(e, path))?,
        };
        let mut names = Vec::new();
        for entry in dir.entries()? {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let slash = if entry.file_type()?.is_dir() { "/" } else { "" };
            names.push(format!("{name}{slash}"));
        }
        names.sort();
        Ok(names)
    }

    /// Writes `bytes` at `path` (making its directories), replacing what was there, unless the
    /// tenant's workspaces would then hold more than the quota.
    pub fn write(&self, path: &str, bytes: &[u8]) -> Result<WorkspaceFile, WorkspaceError> {
        let relative = checked(path)?;
        self.ensure()?;
        let dir = Dir::open_ambient_dir(&self.dir, ambient_authority())?;
        let replaced = match dir.symlink_metadata(relative) {
            Ok(metadata) if metadata.is_dir() => return Err(WorkspaceError::BadPath(path.into())),
            Ok(metadata) => charge_of(metadata.len()),
            Err(_) => 0,
        };
        let parents = relative.parent().map_or(0, |p| p.components().count() as u64);
        let wanted = (charge_of(bytes.len() as u64) + parents * BLOCK).saturating_sub(replaced);
        let used = self.tenant_charged()?;
        if used + wanted > self.quota {
            return Err(WorkspaceError::Full { quota: self.quota, used, wanted });
        }
        if let Some(parent) = relative.parent().filter(|p| !p.as_os_str().is_empty()) {
            dir.create_dir_all(parent).map_err(|e| not_found_or(e, path))?;
        }
        dir.write(relative, bytes).map_err(|e| not_found_or(e, path))?;
        let metadata = dir.metadata(relative)?;
        Ok(WorkspaceFile {
            path: path.to_owned(),
            bytes: metadata.len(),
            modified_ms: modified_ms(&metadata),
        })
    }

    /// Removes the file at `path`.
    pub fn remove(&self, path: &str) -> Result<(), WorkspaceError> {
        let relative = checked(path)?;
        let dir = open(&self.dir)?.ok_or_else(|| WorkspaceError::NotFound(path.to_owned()))?;
        match dir.symlink_metadata(relative) {
            Ok(metadata) if !metadata.is_dir() => Ok(dir.remove_file(relative)?),
            Ok(_) => Err(WorkspaceError::NotFound(path.to_owned())),
            Err(e) => Err(not_found_or(e, path)),
        }
    }

    /// Removes the files at `paths`, as far as it can (a call's writes past the quota).
    pub fn remove_all(&self, paths: &[&str]) {
        for path in paths {
            if let Err(e) = self.remove(path) {
                tracing::warn!(workspace = %self.dir.display(), path, "could not remove: {e}");
            }
        }
    }

    /// Deletes the workspace and everything in it.
    pub fn delete(&self) -> io::Result<()> {
        match std::fs::remove_dir_all(&self.dir) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }
}

/// `path` as a relative path of plain names, or why not.
fn checked(path: &str) -> Result<&Path, WorkspaceError> {
    let plain = |name: &str| !name.is_empty() && name != "." && name != ".." && name.len() <= 255;
    if path.is_empty()
        || path.len() > PATH_MOST
        || path.contains('\0')
        || !path.split('/').all(plain)
    {
        return Err(WorkspaceError::BadPath(path.to_owned()));
    }
    Ok(Path::new(path))
}

/// A lookup that failed: `NotFound` for what is not there (or is outside the workspace).
fn not_found_or(error: io::Error, path: &str) -> WorkspaceError {
    match error.kind() {
        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory => {
            WorkspaceError::NotFound(path.to_owned())
        }
        // cap-std refuses a lookup that would leave the directory with PermissionDenied.
        io::ErrorKind::PermissionDenied | io::ErrorKind::InvalidInput => {
            WorkspaceError::BadPath(path.to_owned())
        }
        _ => WorkspaceError::Io(error),
    }
}

/// The directory at `dir`, or none when there is none.
fn open(dir: &Path) -> io::Result<Option<Dir>> {
    match Dir::open_ambient_dir(dir, ambient_authority()) {
        Ok(dir) => Ok(Some(dir)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Calls `visit` with the path and metadata of every entry under `dir`, never following a link.
fn walk(
    dir: &Dir,
    prefix: &str,
    visit: &mut dyn FnMut(&str, &cap_std::fs::Metadata),
) -> io::Result<()> {
    for entry in dir.entries()? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = if prefix.is_empty() { name.clone() } else { format!("{prefix}/{name}") };
        let metadata = dir.symlink_metadata(&name)?;
        visit(&path, &metadata);
        if metadata.is_dir() {
            // cap-std keeps even a directory swapped for a link meanwhile inside `dir`.
            walk(&dir.open_dir(&name)?, &path, visit)?;
        }
    }
    Ok(())
}

fn charge(metadata: &cap_std::fs::Metadata) -> u64 {
    if metadata.is_file() { charge_of(metadata.len()) } else { BLOCK }
}

fn charge_of(bytes: u64) -> u64 {
    bytes.div_ceil(BLOCK).max(1) * BLOCK
}

fn modified_ms(metadata: &cap_std::fs::Metadata) -> u64 {
    metadata
        .modified()
        .ok()
        .and_then(|time| time.into_std().duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |since| since.as_millis() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workspace(quota: u64) -> (tempfile::TempDir, Workspace) {
        let root = tempfile::tempdir().unwrap();
        let workspace = Workspaces::new(root.path().to_owned(), quota).of(Some("a"), "s1");
        (root, workspace)
    }

    #[test]
    fn a_written_file_reads_back_and_is_listed() {
        let (_root, w) = workspace(1 << 20);
        w.write("data/in.csv", b"a,b\n1,2\n").unwrap();
        let (mut file, bytes) = w.open_file("data/in.csv").unwrap();
        let mut read = String::new();
        std::io::Read::read_to_string(&mut file, &mut read).unwrap();
        assert_eq!((read.as_str(), bytes), ("a,b\n1,2\n", 8));
        let scan = w.scan().unwrap();
        assert_eq!(scan.files.keys().collect::<Vec<_>>(), ["data/in.csv"]);
        assert_eq!(scan.charged, 2 * BLOCK, "the file and its directory");
        w.remove("data/in.csv").unwrap();
        assert!(matches!(w.open_file("data/in.csv"), Err(WorkspaceError::NotFound(_))));
    }

    #[test]
    fn paths_leaving_the_workspace_are_refused() {
        let (root, w) = workspace(1 << 20);
        std::fs::write(root.path().join("secret"), "no").unwrap();
        for path in ["", "/etc/passwd", "../secret", "a/../../secret", "./x", "a//b", "a/"] {
            assert!(matches!(w.write(path, b"x"), Err(WorkspaceError::BadPath(_))), "{path}");
            assert!(matches!(w.open_file(path), Err(WorkspaceError::BadPath(_))), "{path}");
        }
        w.ensure().unwrap();
        std::os::unix::fs::symlink(root.path().join("secret"), w.dir().join("link")).unwrap();
        std::os::unix::fs::symlink("../..", w.dir().join("up")).unwrap();
        assert!(w.open_file("link").is_err(), "an absolute link is not followed out");
        assert!(w.open_file("up/secret").is_err(), "a relative link is not followed out");
        assert!(w.write("up/secret", b"changed").is_err());
        assert_eq!(std::fs::read_to_string(root.path().join("secret")).unwrap(), "no");
        assert_eq!(w.scan().unwrap().files.len(), 0, "links are not listed as files");
    }

    #[test]
    fn a_write_past_the_tenants_quota_is_refused() {
        // s2's directory and file, s1's directory and file: five blocks.
        let (root, w) = workspace(5 * BLOCK);
        let other = Workspaces::new(root.path().to_owned(), 5 * BLOCK).of(Some("a"), "s2");
        other.write("big", &[0; 2 * BLOCK as usize]).unwrap();
        w.write("small", b"x").unwrap();
        let full = w.write("more", b"y").unwrap_err();
        assert!(matches!(full, WorkspaceError::Full { quota: 20480, used: 20480, wanted: 4096 }));
        w.write("small", b"replaced").unwrap();
        let elsewhere = Workspaces::new(root.path().to_owned(), 5 * BLOCK).of(Some("b"), "s3");
        elsewhere.write("b", &[0; 4 * BLOCK as usize]).unwrap();
        w.delete().unwrap();
        assert_eq!(w.tenant_charged().unwrap(), 3 * BLOCK, "s2's file and its directory");
    }

    #[test]
    fn changed_files_are_those_new_or_rewritten() {
        let (_root, w) = workspace(1 << 20);
        w.write("kept", b"1").unwrap();
        w.write("rewritten", b"1").unwrap();
        let before = w.scan().unwrap();
        w.write("rewritten", b"22").unwrap();
        w.write("new", b"3").unwrap();
        let after = w.scan().unwrap();
        let (together, tenant) = w.scan_with_tenant().unwrap();
        assert_eq!(
            (together, tenant),
            (after.clone(), after.charged + BLOCK),
            "one walk, same scan"
        );
        let changed: Vec<&str> =
            after.changed_since(&before).iter().map(|f| f.path.as_str()).collect();
        assert_eq!(changed, ["new", "rewritten"]);
    }
}
