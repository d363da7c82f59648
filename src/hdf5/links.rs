//! Group members: the links of one group, or every object below it (what h5py's
//! `Group.keys()` and `Group.visit()` walk).
//!
//! External links are never followed (they are listed with their own kind); the group path
//! itself is looked up with the same refusal of external links as datasets unless the file
//! was opened with `VH5_FILE_ALLOW_EXTERNAL` (see [`super::external`]).

use std::ffi::{c_char, c_void, CStr, CString};

use hdf5_sys::h5::{herr_t, hsize_t};
use hdf5_sys::h5i::{hid_t, H5I_type_t};
use hdf5_sys::h5l::H5L_type_t;
use hdf5_sys::h5o::H5O_type_t;
use hdf5_sys::h5p::H5P_DEFAULT;

use super::compat::{self, link_creation_order, link_type, LinkInfo};
use super::dataset::{components, expect_kind, trim_slashes};
use super::error::{check, clear_stack, hdf5_error};
use super::handle::Handle;
use super::lock::H5Lock;
use crate::error::{ErrorKind, Result};
use crate::names::{escape, path_order};

/// Kind byte of a group member: a group.
pub const KIND_GROUP: u8 = b'g';
/// Kind byte: a dataset.
pub const KIND_DATASET: u8 = b'd';
/// Kind byte: a committed (named) datatype.
pub const KIND_DATATYPE: u8 = b't';
/// Kind byte: an external link (not followed).
pub const KIND_EXTERNAL: u8 = b'e';
/// Kind byte: a soft link whose target does not exist (dangling).
pub const KIND_DANGLING: u8 = b's';
/// Kind byte: anything else (user-defined link, unknown object type).
pub const KIND_OTHER: u8 = b'?';

fn kind_of_type(t: H5O_type_t) -> u8 {
    match t {
        H5O_type_t::H5O_TYPE_GROUP => KIND_GROUP,
        H5O_type_t::H5O_TYPE_DATASET => KIND_DATASET,
        H5O_type_t::H5O_TYPE_NAMED_DATATYPE => KIND_DATATYPE,
        _ => KIND_OTHER,
    }
}

/// The members of the group at `group` (a path relative to `loc`, `"."` or `"/"` for the
/// root) as (kind byte, name) pairs in h5py's order: its links when not `recursive` (names
/// are link names; soft links are reported with the kind of their target), in creation order
/// when the group tracks it, else in name order (see `sort_like_h5py`); every hard link
/// below it when `recursive` (names relative to the group, in libhdf5's name order, parents
/// before their members, as h5py's `visit` gives them whatever order the groups track; an
/// object reachable by two hard links is listed under both names; soft and external links
/// are left out, as h5py's `visit` does).
///
/// Names are bytes, as stored in the file (UTF-8 not required, never replaced: two links
/// whose names differ only in bytes that are not UTF-8 stay two); `group` may be any bytes
/// but NUL. Messages show names as [`crate::names::escape`] does.
///
/// Errors: `InvalidHandle` (`loc` not an open file or group); `NotFound` (no object at
/// `group`); `InvalidArgument` (`group` is not a group, naming what it is, or holds a NUL
/// byte); `Unsupported` (the path goes through an external link and `loc` was not opened with
/// `VH5_FILE_ALLOW_EXTERNAL`); `Hdf5` (libhdf5 could not read the links).
pub fn members(lock: &H5Lock, loc: hid_t, group: impl AsRef<[u8]>, recursive: bool) -> Result<Vec<(u8, Vec<u8>)>> {
    expect_kind(lock, loc, &[H5I_type_t::H5I_FILE, H5I_type_t::H5I_GROUP], "file")?;
    let group = group.as_ref();
    let group = if group.is_empty() { &b"."[..] } else { group };
    let shown = escape(group);
    let c = CString::new(group).map_err(|_| err!(InvalidArgument, "argument `group` contains a NUL byte"))?;
    super::external::with_link_access(
        lock,
        loc,
        || format!("`{shown}`"),
        |lapl, _| {
            match object_kind(lock, loc, group, &c, lapl)? {
                KIND_GROUP => {}
                KIND_DATASET => bail!(InvalidArgument, "`{shown}` is a dataset, not a group"),
                KIND_DATATYPE => bail!(InvalidArgument, "`{shown}` is a named datatype, not a group"),
                _ => bail!(InvalidArgument, "`{shown}` is not a group"),
            }
            if recursive {
                visit(lock, loc, &c, lapl)
            } else {
                links(lock, loc, &c, lapl)
            }
        },
    )
}

/// The kind byte of the object at `name`; `NotFound` when it does not exist.
fn object_kind(lock: &H5Lock, loc: hid_t, name: &[u8], c: &CStr, lapl: hid_t) -> Result<u8> {
    walk_path(lock, loc, name, lapl)?;
    match info_kind(lock, loc, c, lapl)? {
        Some(k) => Ok(k),
        None => bail!(NotFound, "`{}` is a soft link to an object that does not exist", escape(name)),
    }
}

/// Check that every link of the path `name` exists and that every component but the last is
/// a group: `NotFound` naming the first missing component, `InvalidArgument` naming a
/// component that is not a group (rather than a libhdf5 stack). The last link is not
/// followed.
fn walk_path(lock: &H5Lock, loc: hid_t, name: &[u8], lapl: hid_t) -> Result<()> {
    let shown = escape(name);
    if name != b"." && name != b"/" {
        // Walk the components so a missing one is named (and a dataset in the middle of the
        // path is reported as such rather than as a libhdf5 stack).
        let mut prefix: Vec<u8> = Vec::new();
        if name.starts_with(b"/") {
            prefix.push(b'/');
        }
        for comp in components(name) {
            if !prefix.is_empty() && !prefix.ends_with(b"/") {
                let parent = CString::new(prefix.as_slice()).map_err(|_| err!(InvalidArgument, "argument `group` contains a NUL byte"))?;
                let k = info_kind(lock, loc, &parent, lapl)?;
                if k != Some(KIND_GROUP) {
                    bail!(InvalidArgument, "`{shown}`: `{}` is a {}, not a group", escape(&prefix), kind_word(k));
                }
                prefix.push(b'/');
            }
            prefix.extend_from_slice(comp);
            let p = CString::new(prefix.as_slice()).map_err(|_| err!(InvalidArgument, "argument `group` contains a NUL byte"))?;
            // SAFETY: valid C string and loc; lock held.
            let e = unsafe { hdf5_sys::h5l::H5Lexists(loc, p.as_ptr(), lapl) };
            if e < 0 {
                return Err(hdf5_error(lock, ErrorKind::Hdf5, format_args!("cannot look up `{}`", escape(&prefix))));
            }
            if e == 0 {
                clear_stack(lock);
                if prefix == trim_slashes(name) {
                    bail!(NotFound, "no object `{shown}` in this file");
                }
                bail!(NotFound, "no object `{shown}` in this file: `{}` does not exist", escape(&prefix));
            }
        }
    }
    Ok(())
}

fn kind_word(k: Option<u8>) -> &'static str {
    match k {
        Some(KIND_DATASET) => "dataset",
        Some(KIND_DATATYPE) => "named datatype",
        Some(KIND_GROUP) => "group",
        None => "dangling soft link",
        _ => "object of another kind",
    }
}

/// Kind of the object at `c` (following soft links) from its object header, without opening
/// it ([`compat::object_type`]: a damaged virtual dataset's layout crashes libhdf5 1.10's
/// `H5Oopen`, see [`super::layout_peek`]); None when libhdf5 cannot read it (a dangling soft
/// link, a refused external link, a damaged header).
fn info_kind(lock: &H5Lock, loc: hid_t, c: &CStr, lapl: hid_t) -> Result<Option<u8>> {
    // SAFETY: valid ids and C string; lock held.
    match unsafe { compat::object_type(loc, c.as_ptr(), lapl) } {
        Some(t) => Ok(Some(kind_of_type(t))),
        None => {
            clear_stack(lock);
            Ok(None)
        }
    }
}

/// One link of a group: its type, name and creation order (when the group tracks it).
type Link = (H5L_type_t, Vec<u8>, Option<i64>);

struct LinkList {
    names: Vec<Link>,
}

unsafe extern "C" fn link_cb(_g: hid_t, name: *const c_char, info: *const LinkInfo, data: *mut c_void) -> herr_t {
    // SAFETY: libhdf5 passes a valid name and info; data is the LinkList given below.
    unsafe {
        let out = &mut *(data as *mut LinkList);
        out.names.push((link_type(info), CStr::from_ptr(name).to_bytes().to_vec(), link_creation_order(info)));
    }
    0
}

/// Sort the links of one group as h5py's `Group.keys()` lists them: by creation order when
/// the group tracks it (`H5P_CRT_ORDER_TRACKED`, indexed or not: h5py's `track_order=True`),
/// which shows as every link carrying a creation order; else by name, byte by byte
/// ([`path_order`]). Equal creation orders (only in a damaged file) fall back to name order.
///
/// The links are gathered in libhdf5's native order and sorted here rather than iterated by
/// the creation-order index: any order but native makes libhdf5 build a link table that
/// crashes on a damaged dense group ([`compat::iterate_by_name`]).
fn sort_like_h5py(links: &mut [Link]) {
    if links.iter().all(|l| l.2.is_some()) {
        links.sort_by(|a, b| a.2.cmp(&b.2).then_with(|| path_order(&a.1, &b.1)));
    } else {
        links.sort_by(|a, b| path_order(&a.1, &b.1));
    }
}

fn links(lock: &H5Lock, loc: hid_t, group: &CStr, lapl: hid_t) -> Result<Vec<(u8, Vec<u8>)>> {
    let mut list = LinkList { names: Vec::new() };
    let mut idx: hsize_t = 0;
    // SAFETY: the callback only pushes into `list`, alive for the call; lock held.
    unsafe {
        check(lock, compat::iterate_by_name(loc, group.as_ptr(), &mut idx, link_cb, &mut list as *mut _ as *mut c_void, lapl), "H5Literate_by_name")?;
    }
    sort_like_h5py(&mut list.names);
    let gname = group.to_bytes();
    let mut out = Vec::with_capacity(list.names.len());
    for (t, name, _) in list.names {
        let kind = match t {
            H5L_type_t::H5L_TYPE_HARD | H5L_type_t::H5L_TYPE_SOFT => {
                let full = if gname == b"." { name.clone() } else { [trim_slashes(gname), b"/", &name].concat() };
                let c = CString::new(full).map_err(|_| err!(Hdf5, "link name with a NUL byte"))?;
                // A soft link that resolves to nothing is dangling; a hard link whose object
                // cannot be opened (damaged header) is of unknown kind.
                let missing = if t == H5L_type_t::H5L_TYPE_SOFT { KIND_DANGLING } else { KIND_OTHER };
                info_kind(lock, loc, &c, lapl)?.unwrap_or(missing)
            }
            H5L_type_t::H5L_TYPE_EXTERNAL => KIND_EXTERNAL,
            _ => KIND_OTHER,
        };
        out.push((kind, name));
    }
    Ok(out)
}

struct Visit<'l> {
    lock: &'l H5Lock,
    group: hid_t,
    out: Vec<(u8, Vec<u8>)>,
}

unsafe extern "C" fn visit_cb(_g: hid_t, name: *const c_char, info: *const LinkInfo, data: *mut c_void) -> herr_t {
    // SAFETY: libhdf5 passes a valid name and info; data is the Visit given below; the lock
    // is held by the caller of H5Lvisit_by_name for the whole walk.
    unsafe {
        let v = &mut *(data as *mut Visit);
        if link_type(info) != H5L_type_t::H5L_TYPE_HARD {
            return 0;
        }
        let c = CStr::from_ptr(name);
        let kind = match compat::object_type(v.group, c.as_ptr(), H5P_DEFAULT) {
            Some(t) => kind_of_type(t),
            None => {
                clear_stack(v.lock);
                KIND_OTHER
            }
        };
        v.out.push((kind, c.to_bytes().to_vec()));
    }
    0
}

fn visit(lock: &H5Lock, loc: hid_t, group: &CStr, lapl: hid_t) -> Result<Vec<(u8, Vec<u8>)>> {
    // SAFETY: valid ids and C string; lock held.
    let g = Handle::new(lock, unsafe { hdf5_sys::h5g::H5Gopen2(loc, group.as_ptr(), lapl) }, "H5Gopen")?;
    let mut v = Visit { lock, group: g.id(), out: Vec::new() };
    // SAFETY: the callback only reads ids of `g` and pushes into `v`, alive for the call.
    unsafe {
        check(lock, compat::visit_by_name(g.id(), c".".as_ptr(), visit_cb, &mut v as *mut _ as *mut c_void, H5P_DEFAULT), "H5Lvisit_by_name")?;
    }
    v.out.sort_by(|a, b| path_order(&a.1, &b.1));
    Ok(v.out)
}

/// Kind byte of [`link_value`]: a hard link.
pub const LINK_HARD: u8 = b'h';
/// Kind byte of [`link_value`]: a soft link (its value: the target path).
pub const LINK_SOFT: u8 = b's';
/// Kind byte of [`link_value`]: an external link (its value: file name, NUL, object path).
pub const LINK_EXTERNAL: u8 = b'e';
/// Kind byte of [`link_value`]: a user-defined link class (its value is not interpreted).
pub const LINK_OTHER: u8 = b'?';

/// The link at `name` (a path relative to `loc`, which must not end at the root) itself, not
/// followed: its kind ([`LINK_HARD`], [`LINK_SOFT`], [`LINK_EXTERNAL`], [`LINK_OTHER`]) and
/// value: the target path of a soft link; the file name, a NUL byte and the object path of an
/// external link (libhdf5's `H5Lunpack_elink_val`); empty for the others. What h5py's
/// `Group.get(name, getlink=True)` reads. Values are the bytes stored in the file.
///
/// Errors: `InvalidHandle` (`loc` not an open file or group); `InvalidArgument` (`name` is
/// empty, the root, holds a NUL byte, or a component before the last is not a group);
/// `NotFound` (a link of the path does not exist); `Unsupported` (the path goes through an
/// external link before its last component and `loc` was not opened with
/// `VH5_FILE_ALLOW_EXTERNAL`); `Hdf5` (libhdf5 could not read the link, or an external link's
/// value is malformed).
pub fn link_value(lock: &H5Lock, loc: hid_t, name: impl AsRef<[u8]>) -> Result<(u8, Vec<u8>)> {
    expect_kind(lock, loc, &[H5I_type_t::H5I_FILE, H5I_type_t::H5I_GROUP], "file")?;
    let name = name.as_ref();
    let shown = escape(name);
    if trim_slashes(name).is_empty() || components(name).all(|c| c == b".") {
        bail!(InvalidArgument, "argument `name`: `{shown}` names no link (the root group is not reached by a link)");
    }
    let c = CString::new(name).map_err(|_| err!(InvalidArgument, "argument `name` contains a NUL byte"))?;
    super::external::with_link_access(lock, loc, || format!("`{shown}`"), |lapl, _| read_link(lock, loc, &c, &shown, lapl))
}

/// [`link_value`] of the link `c` (shown as `shown` in messages) with the link access `lapl`.
fn read_link(lock: &H5Lock, loc: hid_t, c: &CStr, shown: &str, lapl_id: hid_t) -> Result<(u8, Vec<u8>)> {
    walk_path(lock, loc, c.to_bytes(), lapl_id)?;
    // SAFETY: valid ids and C string; lock held.
    let Some((t, size)) = (unsafe { compat::link_info(loc, c.as_ptr(), lapl_id) }) else {
        return Err(hdf5_error(lock, ErrorKind::Hdf5, format_args!("cannot read the link `{shown}`")));
    };
    let kind = match t {
        H5L_type_t::H5L_TYPE_HARD => return Ok((LINK_HARD, Vec::new())),
        H5L_type_t::H5L_TYPE_SOFT => LINK_SOFT,
        H5L_type_t::H5L_TYPE_EXTERNAL => LINK_EXTERNAL,
        _ => return Ok((LINK_OTHER, Vec::new())),
    };
    // The value's size comes from the file: a link value is held in a link message of the
    // group (at most 64 KiB in an object header; dense groups' heaps are bounded alike).
    if size > 1 << 20 {
        bail!(Hdf5, "the link `{shown}`: its value claims {size} bytes: the group's metadata is corrupted");
    }
    let mut buf = vec![0u8; size.max(1)];
    // SAFETY: valid ids and C string; `buf` is writable for `buf.len()` bytes; lock held.
    if unsafe { hdf5_sys::h5l::H5Lget_val(loc, c.as_ptr(), buf.as_mut_ptr().cast(), buf.len(), lapl_id) } < 0 {
        return Err(hdf5_error(lock, ErrorKind::Hdf5, format_args!("cannot read the value of the link `{shown}`")));
    }
    if kind == LINK_SOFT {
        let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
        buf.truncate(end);
        return Ok((kind, buf));
    }
    let (mut flags, mut file, mut path): (std::ffi::c_uint, *const c_char, *const c_char) = (0, std::ptr::null(), std::ptr::null());
    // SAFETY: `buf` holds the value libhdf5 wrote; the out-pointers are locals; lock held.
    if unsafe { hdf5_sys::h5l::H5Lunpack_elink_val(buf.as_ptr().cast(), size, &mut flags, &mut file, &mut path) } < 0 || file.is_null() || path.is_null() {
        return Err(hdf5_error(lock, ErrorKind::Hdf5, format_args!("the external link `{shown}`: its value is malformed")));
    }
    // SAFETY: libhdf5 checked both strings are NUL-terminated inside `buf` (it refuses the
    // value otherwise); they point into `buf`, alive here.
    let (file, path) = unsafe { (CStr::from_ptr(file).to_bytes(), CStr::from_ptr(path).to_bytes()) };
    let mut out = Vec::with_capacity(file.len() + path.len() + 1);
    out.extend_from_slice(file);
    out.push(0);
    out.extend_from_slice(path);
    Ok((kind, out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(links: &[Link]) -> Vec<&[u8]> {
        links.iter().map(|l| l.1.as_slice()).collect()
    }

    #[test]
    fn links_sort_like_h5py_creation_order_when_tracked_else_name_order() {
        let hard = H5L_type_t::H5L_TYPE_HARD;
        let mut tracked = vec![(hard, b"a".to_vec(), Some(2)), (hard, b"z".to_vec(), Some(0)), (hard, b"m\xe9".to_vec(), Some(1))];
        sort_like_h5py(&mut tracked);
        assert_eq!(names(&tracked), vec![&b"z"[..], b"m\xe9", b"a"]);
        let mut untracked = vec![(hard, b"a-x".to_vec(), None), (hard, b"a".to_vec(), None), (hard, b"B".to_vec(), None)];
        sort_like_h5py(&mut untracked);
        assert_eq!(names(&untracked), vec![&b"B"[..], b"a", b"a-x"]);
        // a link without a creation order (not what libhdf5 writes): name order for all
        let mut mixed = vec![(hard, b"b".to_vec(), Some(0)), (hard, b"a".to_vec(), None)];
        sort_like_h5py(&mut mixed);
        assert_eq!(names(&mixed), vec![&b"a"[..], b"b"]);
        // equal creation orders (a damaged file): name order between them
        let mut equal = vec![(hard, b"y".to_vec(), Some(5)), (hard, b"x".to_vec(), Some(5)), (hard, b"w".to_vec(), Some(9))];
        sort_like_h5py(&mut equal);
        assert_eq!(names(&equal), vec![&b"x"[..], b"y", b"w"]);
    }
}
