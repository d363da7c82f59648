//! RAII ownership of libhdf5 identifiers (`hid_t`).
//!
//! A [`Handle`] owns one reference to a libhdf5 object id and closes it when dropped, taking
//! the process-wide lock to do so. [`Handle::into_raw`] gives the id away (to a C caller who
//! closes it with `vh5_close`). [`Handle::adopt_dataset`] takes one more reference to a
//! dataset id the caller opened (h5py's, in the same libhdf5). [`dataset_name`] names a
//! dataset id in messages. [`opened_by_vh5`] tells the dataset ids vh5 opened itself (by
//! path) from ids handed in by a caller: only the former may use vh5's decoded-chunk cache.

use hdf5_sys::h5d::H5Dclose;
use hdf5_sys::h5f::H5Fclose;
use hdf5_sys::h5g::H5Gclose;
use std::collections::HashSet;
use std::sync::Mutex;

use hdf5_sys::h5i::{hid_t, H5I_type_t, H5Idec_ref, H5Iget_type, H5Iinc_ref};
use hdf5_sys::h5p::H5Pclose;
use hdf5_sys::h5s::H5Sclose;
use hdf5_sys::h5t::H5Tclose;

use super::error::{check, clear_stack, session};
use super::lock::H5Lock;
use crate::error::Result;

/// An owned libhdf5 id, closed on drop.
#[derive(Debug)]
pub struct Handle {
    id: hid_t,
}

impl Handle {
    /// Take ownership of `id` returned by a libhdf5 call, or turn a negative id into an
    /// [`crate::error::ErrorKind::Hdf5`] error naming `what` with the libhdf5 error stack.
    pub fn new(lock: &H5Lock, id: hid_t, what: impl std::fmt::Display) -> Result<Handle> {
        check(lock, id, what).map(|id| Handle { id })
    }

    /// Take one more reference (`H5Iinc_ref`) to `id`, an open dataset id of the libhdf5 vh5
    /// calls that the caller owns (e.g. h5py's `Dataset.id.id` when vh5 runs inside h5py's
    /// libhdf5): dropping the handle (or `vh5_close` of [`Handle::into_raw`]'s id, which is
    /// the same number) gives back only that reference, the caller's stays valid. Errors:
    /// `InvalidHandle` when `id` is not an open libhdf5 id, or is one of another type (the
    /// message names the type); `Hdf5` when libhdf5 refuses the reference.
    pub fn adopt_dataset(lock: &H5Lock, id: hid_t) -> Result<Handle> {
        match id_type(lock, id) {
            Some(H5I_type_t::H5I_DATASET) => {}
            Some(t) => bail!(InvalidHandle, "dataset_id {id} is a libhdf5 id of {}, not of a dataset", id_description(lock, id, t)),
            None => bail!(
                InvalidHandle,
                "dataset_id {id} is not an open dataset id of the libhdf5 vh5 calls (closed, never opened, or from another libhdf5 instance: an h5py id is valid only when vh5 is bound to h5py's libhdf5)"
            ),
        }
        // SAFETY: `id` is an open dataset id (checked above); lock held.
        check(lock, unsafe { H5Iinc_ref(id) }, format_args!("taking a reference to dataset id {id}"))?;
        Ok(Handle { id })
    }

    /// The raw id (still owned by this handle).
    pub fn id(&self) -> hid_t {
        self.id
    }

    /// Give up ownership: the caller must close the id (with [`close_id`] or `vh5_close`).
    pub fn into_raw(self) -> hid_t {
        let id = self.id;
        std::mem::forget(self);
        id
    }
}

/// What kind of libhdf5 object an id of type `t` is, in words for messages ("a group",
/// "a datatype"), not the `H5I_*` constant.
pub fn id_type_name(t: H5I_type_t) -> &'static str {
    match t {
        H5I_type_t::H5I_FILE => "a file",
        H5I_type_t::H5I_GROUP => "a group",
        // an id of this type may be a transient type (H5Tcopy) as well as a committed one:
        // [`id_description`] tells them apart
        H5I_type_t::H5I_DATATYPE => "a datatype",
        H5I_type_t::H5I_DATASPACE => "a dataspace",
        H5I_type_t::H5I_DATASET => "a dataset",
        H5I_type_t::H5I_ATTR => "an attribute",
        H5I_type_t::H5I_GENPROP_CLS => "a property list class",
        H5I_type_t::H5I_GENPROP_LST => "a property list",
        H5I_type_t::H5I_ERROR_CLASS | H5I_type_t::H5I_ERROR_MSG | H5I_type_t::H5I_ERROR_STACK => "an error-stack object",
        _ => "a libhdf5 object of another kind",
    }
}

/// What the open id `id` of libhdf5 type `t` is, in words: [`id_type_name`], except that a
/// datatype id is told apart as committed ("a named (committed) datatype", stored in a file)
/// or transient ("a transient datatype", e.g. from `H5Tcopy`). Needs the lock.
pub fn id_description(lock: &H5Lock, id: hid_t, t: H5I_type_t) -> &'static str {
    if t == H5I_type_t::H5I_DATATYPE {
        // SAFETY: `id` is an open datatype id; we hold the lock.
        match unsafe { hdf5_sys::h5t::H5Tcommitted(id) } {
            c if c > 0 => return "a named (committed) datatype",
            0 => return "a transient datatype (not stored in a file)",
            _ => clear_stack(lock),
        }
    }
    id_type_name(t)
}

/// The libhdf5 type of `id`, or `None` when it is not a valid open id (`H5Iget_type` checks
/// that the object exists, not only the type bits of the id).
pub fn id_type(lock: &H5Lock, id: hid_t) -> Option<H5I_type_t> {
    if id <= 0 {
        return None;
    }
    // SAFETY: H5Iget_type accepts any integer.
    let t = unsafe { H5Iget_type(id) };
    if t == H5I_type_t::H5I_BADID || t == H5I_type_t::H5I_UNINIT {
        clear_stack(lock);
        None
    } else {
        Some(t)
    }
}

/// Dataset ids vh5 opened itself ([`mark_opened_by_vh5`]), until closed through [`close_id`].
static OPENED: Mutex<Option<HashSet<hid_t>>> = Mutex::new(None);

/// Record that vh5 opened the dataset `id` itself (by path, `vh5_dataset_open`): nobody but
/// vh5's caller holds it, so vh5 may keep decoded chunks of it (when its file cannot change).
pub fn mark_opened_by_vh5(id: hid_t) {
    OPENED.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert_with(HashSet::new).insert(id);
}

/// Whether vh5 opened the dataset `id` itself ([`mark_opened_by_vh5`]) and has not closed it.
/// `false` for ids handed in by a caller (h5py's `Dataset.id`, `vh5_dataset_from_hdf5_id`),
/// whose file another part of the process may be writing through the same libhdf5.
pub fn opened_by_vh5(id: hid_t) -> bool {
    OPENED.lock().unwrap_or_else(|p| p.into_inner()).as_ref().is_some_and(|s| s.contains(&id))
}

/// Close `id` with the close function of its type. Returns a libhdf5 error when the close fails.
pub fn close_id(lock: &H5Lock, id: hid_t) -> Result<()> {
    let t = id_type(lock, id);
    if t == Some(H5I_type_t::H5I_DATASET) {
        if let Some(s) = OPENED.lock().unwrap_or_else(|p| p.into_inner()).as_mut() {
            s.remove(&id);
        }
    }
    // SAFETY: we hold the lock; each close matches the id's type.
    let r = unsafe {
        match t {
            Some(H5I_type_t::H5I_FILE) => H5Fclose(id),
            Some(H5I_type_t::H5I_DATASET) => H5Dclose(id),
            Some(H5I_type_t::H5I_GROUP) => H5Gclose(id),
            Some(H5I_type_t::H5I_DATATYPE) => H5Tclose(id),
            Some(H5I_type_t::H5I_DATASPACE) => H5Sclose(id),
            Some(H5I_type_t::H5I_GENPROP_LST) => H5Pclose(id),
            _ => H5Idec_ref(id),
        }
    };
    check(lock, r, format_args!("closing libhdf5 id {id}")).map(|_| ())
}

/// `` `/path/of/dset` in `file.h5` `` for messages (libhdf5's names, shown as
/// [`crate::names::escape`] does: `/a\xe9`; `?` when unknown).
pub fn dataset_name(lock: &H5Lock, dset: hid_t) -> String {
    let shown = |b: Option<Vec<u8>>| b.map_or_else(|| "?".into(), |b| crate::names::escape(&b));
    // SAFETY: valid id; lock held; `name_bytes` passes a buffer of the length it gives.
    let name = shown(name_bytes(lock, &|p, n| unsafe { hdf5_sys::h5i::H5Iget_name(dset, p, n) }));
    format!("`{name}` in `{}`", shown(file_name_bytes(lock, dset)))
}

/// The name of the file holding the object `id` as libhdf5 was given it (`H5Fget_name`: a
/// relative name stays relative), as bytes; `None` (stack cleared) when libhdf5 cannot say.
pub fn file_name_bytes(lock: &H5Lock, id: hid_t) -> Option<Vec<u8>> {
    // SAFETY: as in `dataset_name`.
    name_bytes(lock, &|p, n| unsafe { hdf5_sys::h5f::H5Fget_name(id, p, n) })
}

/// A name from a libhdf5 getter `f(buf, size)` that returns the name's length (called once
/// with NULL, 0 for it); `None` (stack cleared) when it fails or gives an empty name.
fn name_bytes(lock: &H5Lock, f: &dyn Fn(*mut std::ffi::c_char, usize) -> isize) -> Option<Vec<u8>> {
    let n = f(std::ptr::null_mut(), 0);
    if n <= 0 {
        clear_stack(lock);
        return None;
    }
    let mut buf = vec![0u8; n as usize + 1];
    if f(buf.as_mut_ptr() as *mut _, buf.len()) < 0 {
        clear_stack(lock);
        return None;
    }
    buf.truncate(n as usize);
    Some(buf)
}

impl Drop for Handle {
    fn drop(&mut self) {
        let s = session();
        if close_id(s.lock(), self.id).is_err() {
            clear_stack(s.lock());
        }
    }
}

// SAFETY: the id is an integer owned by this value; libhdf5 may be called from any thread as
// long as our lock is held, which `drop` does.
unsafe impl Send for Handle {}
// SAFETY: `&Handle` only reads the id; every libhdf5 call made with it takes the lock.
unsafe impl Sync for Handle {}
