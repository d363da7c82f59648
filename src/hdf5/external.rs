//! Files that point at other files: raw data in external files (`H5Pset_external`), virtual
//! datasets (`H5D_VIRTUAL`, data mapped from source datasets, possibly in other files) and
//! external links (a link naming an object in another file). A crafted file of any of these
//! kinds makes a read return the bytes of any file the process may read, so vh5 refuses them
//! by default (`Unsupported`, naming the dataset, its file and what it points at):
//!
//! - at [`super::open_dataset`]: a path that traverses an external link (refused while
//!   libhdf5 traverses it, by a link-access callback, `H5Pset_elink_cb`), and a dataset whose
//!   storage is external or virtual;
//! - at every read and write of a dataset id (also ids vh5 did not open): external or
//!   virtual storage.
//!
//! Allowed only for files opened with [`FILE_ALLOW_EXTERNAL`] (`VH5_FILE_ALLOW_EXTERNAL`;
//! Python `vh5.File(path, allow_external=True)`) and the datasets opened through them. The
//! allowance is remembered per id (a process-wide set, under its own mutex; entries are
//! removed by [`super::close`]).
//!
//! External raw data files are opened by libhdf5 at each read or write, by the name stored in
//! the file joined to the dataset's external file prefix (env `HDF5_EXTFILE_PREFIX`, else
//! `H5Pset_efile_prefix` of the dataset access list; libhdf5 1.10 reads the variable when the
//! dataset is opened, 2.x once, when the process first uses it; vh5 sets
//! none). With no prefix, libhdf5 (1.10 .. 2.0, as h5py on this machine) resolves a relative
//! name against the current working directory, not the HDF5 file's directory; the prefix
//! `${ORIGIN}` means that directory. vh5 keeps libhdf5's rule (so it reads what h5py reads),
//! and when libhdf5 cannot open an external file, [`explain_external_open_failure`] names the
//! dataset, its file, each external file as resolved and the rule.

use std::collections::HashSet;
use std::ffi::{c_char, c_uint, c_void, CStr};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use hdf5_sys::h5d::H5D_layout_t;
use hdf5_sys::h5i::hid_t;
use hdf5_sys::h5p::*;

use super::error::{check, session};
use super::handle::{dataset_name, file_name_bytes, Handle};
use super::lock::H5Lock;
use crate::error::{Error, ErrorKind, Result};
use crate::names::escape;

/// `vh5_file_open` flag bit: allow datasets that point at other files (see the module docs).
pub const FILE_ALLOW_EXTERNAL: u32 = 2;

static ALLOWED: Mutex<Option<HashSet<hid_t>>> = Mutex::new(None);

/// Remember that `id` (a file opened with [`FILE_ALLOW_EXTERNAL`], or a dataset opened
/// through one) may point at other files.
pub fn allow(id: hid_t) {
    ALLOWED.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert_with(HashSet::new).insert(id);
}

/// Whether `id` was marked by [`allow`].
pub fn allowed(id: hid_t) -> bool {
    ALLOWED.lock().unwrap_or_else(|p| p.into_inner()).as_ref().is_some_and(|s| s.contains(&id))
}

/// Forget `id` (closed).
pub fn forget(id: hid_t) {
    if let Some(s) = ALLOWED.lock().unwrap_or_else(|p| p.into_inner()).as_mut() {
        s.remove(&id);
    }
}

/// What the storage of dataset `dset` points at outside its file, described; `None` when its
/// data lives in its own file.
pub fn storage_elsewhere(lock: &H5Lock, dset: hid_t) -> Result<Option<String>> {
    // SAFETY: valid dataset id (checked by the caller); lock held; buffers sized as passed.
    unsafe {
        let dcpl = Handle::new(lock, hdf5_sys::h5d::H5Dget_create_plist(dset), "H5Dget_create_plist")?;
        let n = check(lock, H5Pget_external_count(dcpl.id()), "H5Pget_external_count")?;
        if n > 0 {
            let mut names = Vec::new();
            for i in 0..n.min(4) as c_uint {
                let mut name = [0 as c_char; 256];
                let (mut off, mut size) = (0, 0);
                check(lock, H5Pget_external(dcpl.id(), i, name.len(), name.as_mut_ptr(), &mut off, &mut size), "H5Pget_external")?;
                names.push(format!("`{}`", escape(CStr::from_ptr(name.as_ptr()).to_bytes())));
            }
            let more = if n > 4 { format!(" and {} more", n - 4) } else { String::new() };
            return Ok(Some(format!("its raw data is stored in {n} external file(s) {}{more} (H5Pset_external)", names.join(", "))));
        }
        if H5Pget_layout(dcpl.id()) == H5D_layout_t::H5D_VIRTUAL {
            let mut count: usize = 0;
            check(lock, H5Pget_virtual_count(dcpl.id(), &mut count), "H5Pget_virtual_count")?;
            let mut files = Vec::new();
            for i in 0..count.min(4) {
                let mut name = [0 as c_char; 256];
                if H5Pget_virtual_filename(dcpl.id(), i, name.as_mut_ptr(), name.len()) >= 0 {
                    files.push(format!("`{}`", escape(CStr::from_ptr(name.as_ptr()).to_bytes())));
                } else {
                    super::error::clear_stack(lock);
                }
            }
            return Ok(Some(format!("it is a virtual dataset mapping {count} source dataset(s) from file(s) {} (H5D_VIRTUAL; `.` = its own file)", files.join(", "))));
        }
        Ok(None)
    }
}

/// What [`refusal`] tells a C / Python caller to do (the CLI replaces it with its own option).
pub const ALLOW_EXTERNAL_HINT: &str = "open the file with VH5_FILE_ALLOW_EXTERNAL (Python: vh5.File(path, allow_external=True))";

/// The refusal of a dataset that points at other files.
pub fn refusal(name: &str, what: &str) -> crate::error::Error {
    err!(Unsupported, "dataset {name}: {what}: refused, a file pointing at other files could make a read return any file this process may read; {ALLOW_EXTERNAL_HINT} to allow it")
}

/// `Unsupported` when `dset` stores its data outside its file (`elsewhere`, from
/// [`storage_elsewhere`]) and was not opened through a file that allows it.
pub fn check_allowed(lock: &H5Lock, dset: hid_t, elsewhere: Option<&str>) -> Result<()> {
    match elsewhere {
        Some(what) if !allowed(dset) => Err(refusal(&dataset_name(lock, dset), what)),
        _ => Ok(()),
    }
}

/// [`check_allowed`] computing the storage facts now (write path).
pub fn check_dataset(lock: &H5Lock, dset: hid_t) -> Result<()> {
    if allowed(dset) {
        return Ok(());
    }
    check_allowed(lock, dset, storage_elsewhere(lock, dset)?.as_deref())
}

/// Where a refused external link pointed (filled by `refuse_elink`).
#[derive(Default)]
pub struct ElinkSeen {
    pub target: Option<String>,
}

/// `H5L_elink_traverse_t` callback refusing every external link traversal, recording its
/// target in `op_data` (an [`ElinkSeen`]).
extern "C" fn refuse_elink(
    parent_file: *const c_char,
    parent_group: *const c_char,
    child_file: *const c_char,
    child_object: *const c_char,
    _acc_flags: *mut c_uint,
    _fapl: hid_t,
    op_data: *mut c_void,
) -> hdf5_sys::h5::herr_t {
    // SAFETY: libhdf5 passes NULL or NUL-terminated names, alive during the callback.
    let s = |p: *const c_char| if p.is_null() { "?".into() } else { escape(unsafe { CStr::from_ptr(p) }.to_bytes()) };
    if !op_data.is_null() {
        // SAFETY: op_data is the `ElinkSeen` given to `H5Pset_elink_cb` by `refusing_lapl`,
        // alive for the libhdf5 call that traverses the link (same thread, lock held).
        let seen = unsafe { &mut *(op_data as *mut ElinkSeen) };
        seen.target = Some(format!("an external link in group `{}` of `{}` points at object `{}` in file `{}`", s(parent_group), s(parent_file), s(child_object), s(child_file)));
    }
    -1
}

/// Run `f` with the link access list for paths followed from `loc`: `H5P_DEFAULT` when `loc`
/// was opened with [`FILE_ALLOW_EXTERNAL`] (then `f`'s second argument is true), else a list
/// refusing every external link ([`refusing_lapl`]). When `f` tried to traverse an external
/// link so refused, its result, whatever it was, becomes the [`refusal`] naming `what()` (e.g.
/// "`/grp/x`") and the link's target, and libhdf5's error stack is cleared.
pub fn with_link_access<T>(lock: &H5Lock, loc: hid_t, what: impl FnOnce() -> String, f: impl FnOnce(hid_t, bool) -> Result<T>) -> Result<T> {
    let allow_ext = allowed(loc);
    let mut seen = ElinkSeen::default();
    let lapl = if allow_ext { None } else { Some(refusing_lapl(lock, &mut seen)?) };
    let r = f(lapl.as_ref().map_or(H5P_DEFAULT, |h| h.id()), allow_ext);
    drop(lapl);
    if let Some(target) = seen.target.take() {
        super::error::clear_stack(lock);
        return Err(refusal(&what(), &target));
    }
    r
}

/// A link access property list whose external-link traversals fail (recording the target in
/// `seen`, which must outlive every libhdf5 call given the list).
pub fn refusing_lapl(lock: &H5Lock, seen: &mut ElinkSeen) -> Result<Handle> {
    // SAFETY: lock held; `seen` outlives the uses of the list (the caller's contract).
    unsafe {
        let lapl = Handle::new(lock, H5Pcreate(*H5P_CLS_LINK_ACCESS), "H5Pcreate(link access)")?;
        check(lock, H5Pset_elink_cb(lapl.id(), Some(refuse_elink), seen as *mut ElinkSeen as *mut c_void), "H5Pset_elink_cb")?;
        Ok(lapl)
    }
}

/// libhdf5's words when it cannot open an external raw data file (`H5D__efl_read`,
/// `H5D__efl_write`; 1.10 .. 2.0).
const EFL_OPEN_FAILED: &str = "unable to open external raw data file";

/// External files described in a message, at most (then "and N more").
const MAX_LISTED: usize = 8;

/// `e`, the failure of a read or write of `dset`, with what libhdf5 could not open when it is
/// libhdf5's "unable to open external raw data file": the dataset and its HDF5 file, each
/// external file as resolved (`name` -> path: missing, not readable, or found) and libhdf5's
/// rule for relative names (see the module docs), with libhdf5's stack after it. Any other
/// error unchanged. Takes the libhdf5 lock only for that error.
pub fn explain_external_open_failure(dset: hid_t, e: Error) -> Error {
    if e.kind != ErrorKind::Hdf5 || !e.message.contains(EFL_OPEN_FAILED) {
        return e;
    }
    let s = session();
    let l = s.lock();
    let Ok(names) = external_names(l, dset) else {
        super::error::clear_stack(l);
        return e;
    };
    let cwd = std::env::current_dir().unwrap_or_default();
    let h5file = file_name_bytes(l, dset).map(|b| PathBuf::from(std::ffi::OsStr::from_bytes(&b))).unwrap_or_default();
    let origin = cwd.join(h5file.parent().unwrap_or(Path::new("")));
    let (prefix, from) = match std::env::var_os("HDF5_EXTFILE_PREFIX") {
        Some(p) => (p.as_bytes().to_vec(), "env HDF5_EXTFILE_PREFIX"),
        None => (efile_prefix(l, dset), "H5Pset_efile_prefix"),
    };
    let prefix = String::from_utf8_lossy(&prefix).into_owned();
    let mut listed: Vec<String> = names.iter().take(MAX_LISTED).map(|n| resolved_state(n, &prefix, &origin, &cwd)).collect();
    if names.len() > MAX_LISTED {
        listed.push(format!("and {} more", names.len() - MAX_LISTED));
    }
    let relative = names.iter().any(|n| !n.is_absolute());
    let rule = if !relative {
        String::new()
    } else if prefix.is_empty() || prefix == "." {
        let beside: Vec<String> = names.iter().filter(|n| !n.is_absolute() && origin.join(n).is_file()).take(MAX_LISTED).map(|n| format!("`{}`", shown(n))).collect();
        let there = if beside.is_empty() { String::new() } else { format!(", which holds {}", beside.join(", ")) };
        format!(
            ". libhdf5 (as h5py) resolves a relative external file name against the current working directory (`{}`), not against the HDF5 file's \
             directory (`{}`{there}): run from the directory the names are relative to, or set the environment variable \
             HDF5_EXTFILE_PREFIX='${{ORIGIN}}' (the HDF5 file's directory) before the process starts (libhdf5 2.x reads it once)",
            shown(&cwd),
            shown(&origin)
        )
    } else {
        format!(". Relative names were resolved against the external file prefix `{prefix}` (from {from}; `${{ORIGIN}}` = the HDF5 file's directory `{}`)", shown(&origin))
    };
    Error::new(
        ErrorKind::Hdf5,
        format!("dataset {}: libhdf5 could not open its external raw data file(s) (H5Pset_external): {}{rule}; {}", dataset_name(l, dset), listed.join(", "), e.message),
    )
}

/// The names of the external raw data files of `dset`, in order (`H5Pget_external`).
fn external_names(lock: &H5Lock, dset: hid_t) -> Result<Vec<PathBuf>> {
    // SAFETY: valid dataset id; lock held; buffers sized as passed.
    unsafe {
        let dcpl = Handle::new(lock, hdf5_sys::h5d::H5Dget_create_plist(dset), "H5Dget_create_plist")?;
        let n = check(lock, H5Pget_external_count(dcpl.id()), "H5Pget_external_count")?;
        let mut names = Vec::new();
        for i in 0..n as c_uint {
            let mut name = vec![0u8; 4096];
            let (mut off, mut size) = (0, 0);
            check(lock, H5Pget_external(dcpl.id(), i, name.len() - 1, name.as_mut_ptr() as *mut c_char, &mut off, &mut size), "H5Pget_external")?;
            name.truncate(name.iter().position(|&b| b == 0).unwrap_or(name.len()));
            names.push(PathBuf::from(std::ffi::OsStr::from_bytes(&name)));
        }
        Ok(names)
    }
}

/// The external file prefix of the access list `dset` was opened with (`H5Pget_efile_prefix`;
/// empty when none or unknown).
fn efile_prefix(lock: &H5Lock, dset: hid_t) -> Vec<u8> {
    // SAFETY: valid dataset id; lock held; the buffer holds the length libhdf5 gave + NUL.
    unsafe {
        let Ok(dapl) = Handle::new(lock, hdf5_sys::h5d::H5Dget_access_plist(dset), "H5Dget_access_plist") else {
            super::error::clear_stack(lock);
            return Vec::new();
        };
        let n = H5Pget_efile_prefix(dapl.id(), std::ptr::null_mut(), 0);
        if n <= 0 {
            super::error::clear_stack(lock);
            return Vec::new();
        }
        let mut buf = vec![0u8; n as usize + 1];
        if H5Pget_efile_prefix(dapl.id(), buf.as_mut_ptr() as *mut c_char, buf.len()) < 0 {
            super::error::clear_stack(lock);
            return Vec::new();
        }
        buf.truncate(n as usize);
        buf
    }
}

/// Where libhdf5 looks for the external file `name` given the prefix `prefix` (`""` or `.`:
/// none; `${ORIGIN}...`: under `origin`, the HDF5 file's directory; else a directory, relative
/// ones under `cwd`): an absolute name as it is, a relative one joined to that directory
/// (libhdf5's `H5_combine_path` after `H5D__build_file_prefix`).
fn resolve(name: &Path, prefix: &str, origin: &Path, cwd: &Path) -> PathBuf {
    if name.is_absolute() {
        return name.to_path_buf();
    }
    let dir = if prefix.is_empty() || prefix == "." {
        cwd.to_path_buf()
    } else if let Some(rest) = prefix.strip_prefix("${ORIGIN}") {
        origin.join(rest.trim_start_matches('/'))
    } else {
        cwd.join(prefix)
    };
    dir.join(name)
}

/// A path in messages, as [`crate::names::escape`] shows names.
fn shown(p: &Path) -> String {
    crate::names::escape(p.as_os_str().as_bytes())
}

/// `` `name` as `/resolved/path` (state) ``: missing, not readable (the OS error) or found.
fn resolved_state(name: &Path, prefix: &str, origin: &Path, cwd: &Path) -> String {
    let path = resolve(name, prefix, origin, cwd);
    let state = match std::fs::File::open(&path) {
        Ok(_) => "found".to_string(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => "no such file".to_string(),
        Err(e) => format!("not readable: {e}"),
    };
    format!("`{}` as `{}` ({state})", shown(name), shown(&path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn external_names_resolve_as_libhdf5_does() {
        let (origin, cwd) = (Path::new("/data/h5"), Path::new("/work"));
        let r = |name: &str, prefix: &str| resolve(Path::new(name), prefix, origin, cwd);
        assert_eq!(r("raw.bin", ""), Path::new("/work/raw.bin"));
        assert_eq!(r("raw.bin", "."), Path::new("/work/raw.bin"));
        assert_eq!(r("/abs/raw.bin", "${ORIGIN}"), Path::new("/abs/raw.bin"));
        assert_eq!(r("raw.bin", "${ORIGIN}"), Path::new("/data/h5/raw.bin"));
        assert_eq!(r("raw.bin", "${ORIGIN}/sub"), Path::new("/data/h5/sub/raw.bin"));
        assert_eq!(r("raw.bin", "ext"), Path::new("/work/ext/raw.bin"));
        assert_eq!(r("raw.bin", "/ext"), Path::new("/ext/raw.bin"));
    }
}
