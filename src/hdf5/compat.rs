//! Every difference between the libhdf5 versions vh5 builds against (1.10.3 .. 2.x), behind
//! version-free functions, so no other module names a versioned libhdf5 symbol.
//!
//! `build.rs` turns the version hdf5-sys detected (its `DEP_HDF5_VERSION_<maj>_<min>_<mic>`
//! metadata) into the cfgs `hdf5_1_12` (libhdf5 >= 1.12.0), `hdf5_1_14` (>= 1.14.0) and
//! `hdf5_2` (>= 2.0.0). On >= 1.12 the non-deprecated API is used (`H5Literate_by_name2`,
//! `H5Lvisit2`, `H5Lvisit_by_name2` with `H5L_info2_t`, `H5Fis_accessible`), so vh5 also links against a
//! libhdf5 built without its deprecated symbols; on 2.x raw chunks are read with
//! `H5Dread_chunk2`, which is told the buffer's size and reports the chunk's.
//!
//! Every function here is a plain libhdf5 call: the caller holds the libhdf5 lock
//! ([`super::lock`]) and checks the returned status (negative: failure, error stack set).

use std::ffi::{c_char, c_void};

use hdf5_sys::h5::{herr_t, hsize_t, H5_index_t, H5_iter_order_t};
use hdf5_sys::h5i::hid_t;
use hdf5_sys::h5l::H5L_type_t;

/// The link information libhdf5 hands a link-iteration callback (`H5L_info1_t` on 1.10,
/// `H5L_info2_t` on >= 1.12). Read it only through [`link_type`].
#[cfg(not(hdf5_1_12))]
pub type LinkInfo = hdf5_sys::h5l::H5L_info1_t;
/// The link information libhdf5 hands a link-iteration callback (`H5L_info1_t` on 1.10,
/// `H5L_info2_t` on >= 1.12). Read it only through [`link_type`].
#[cfg(hdf5_1_12)]
pub type LinkInfo = hdf5_sys::h5l::H5L_info2_t;

/// A link-iteration callback: `(group id, link name (NUL-terminated, valid during the call),
/// link info, the caller's data)`; returns 0 to continue, > 0 to stop, < 0 to fail.
pub type LinkCallback = unsafe extern "C" fn(hid_t, *const c_char, *const LinkInfo, *mut c_void) -> herr_t;

/// The type of the link described by `info` (hard, soft, external, user-defined).
///
/// # Safety
/// `info` is the valid pointer libhdf5 passed to a [`LinkCallback`], used during that call.
pub unsafe fn link_type(info: *const LinkInfo) -> H5L_type_t {
    // SAFETY: guaranteed by the caller.
    unsafe { (*info).type_ }
}

/// The creation order of the link described by `info`: `Some` when its group tracks creation
/// order (`H5P_CRT_ORDER_TRACKED`: the link message stores it), `None` otherwise.
///
/// # Safety
/// `info` is the valid pointer libhdf5 passed to a [`LinkCallback`], used during that call.
pub unsafe fn link_creation_order(info: *const LinkInfo) -> Option<i64> {
    // SAFETY: guaranteed by the caller.
    unsafe { ((*info).corder_valid != 0).then_some((*info).corder) }
}

/// Whether `path` is an HDF5 file vh5's default file access reads (> 0 yes, 0 no, < 0 error):
/// `H5Fis_hdf5` on 1.10, `H5Fis_accessible` with the default file access property list from
/// 1.12 on, where `H5Fis_hdf5` is deprecated: a libhdf5 built without deprecated symbols (as
/// the `static-hdf5` feature builds it) has none.
///
/// # Safety
/// NUL-terminated `path`; libhdf5 lock held.
pub unsafe fn is_hdf5(path: *const c_char) -> hdf5_sys::h5::htri_t {
    // SAFETY: guaranteed by the caller.
    unsafe {
        #[cfg(not(hdf5_1_12))]
        return hdf5_sys::h5f::H5Fis_hdf5(path);
        #[cfg(hdf5_1_12)]
        return hdf5_sys::h5f::H5Fis_accessible(path, hdf5_sys::h5p::H5P_DEFAULT);
    }
}

/// The links of the group `group` (a name relative to `loc`), in libhdf5's native order (sort
/// them as `links::sort_like_h5py` does: by their creation order when the group tracks it,
/// else with [`crate::names::path_order`]), from index `*idx` on (`H5Literate_by_name`); `*idx` is left
/// after the last link visited.
///
/// Native order, not name order: for a group whose links are in dense storage (fractal heap +
/// name-hash B-tree) any other order makes libhdf5 build a table of `nlinks` links (a number
/// from the file) with `malloc` and, when the heap is damaged, free every entry of it, filled
/// or not (`H5G__dense_build_table` / `H5G__link_release_table`, 1.10.8 .. 1.14.6): listing
/// such a group crashed (a new-user tryout, session 14: 6 of 150 flipped bytes of a `v110`
/// file, `free(): invalid pointer`, SIGSEGV). Native order walks the B-tree itself.
///
/// # Safety
/// Valid ids, NUL-terminated `group`, `data` what `cb` expects; libhdf5 lock held.
pub unsafe fn iterate_by_name(loc: hid_t, group: *const c_char, idx: &mut hsize_t, cb: LinkCallback, data: *mut c_void, lapl: hid_t) -> herr_t {
    let (by, order) = (H5_index_t::H5_INDEX_NAME, H5_iter_order_t::H5_ITER_NATIVE);
    // SAFETY: guaranteed by the caller.
    unsafe {
        #[cfg(not(hdf5_1_12))]
        return hdf5_sys::h5l::H5Literate_by_name1(loc, group, by, order, idx, Some(cb), data, lapl);
        #[cfg(hdf5_1_12)]
        return hdf5_sys::h5l::H5Literate_by_name2(loc, group, by, order, idx, Some(cb), data, lapl);
    }
}

/// Every link reachable from the group or file `grp`, recursively, in libhdf5's native order
/// (see [`iterate_by_name`]; sort them with [`crate::names::path_order`]) (`H5Lvisit`); names passed to `cb`
/// are relative to `grp`. A group reached by several hard links is walked once, under the
/// first of them met.
///
/// # Safety
/// Valid id, `data` what `cb` expects; libhdf5 lock held.
pub unsafe fn visit(grp: hid_t, cb: LinkCallback, data: *mut c_void) -> herr_t {
    let (by, order) = (H5_index_t::H5_INDEX_NAME, H5_iter_order_t::H5_ITER_NATIVE);
    // SAFETY: guaranteed by the caller.
    unsafe {
        #[cfg(not(hdf5_1_12))]
        return hdf5_sys::h5l::H5Lvisit1(grp, by, order, Some(cb), data);
        #[cfg(hdf5_1_12)]
        return hdf5_sys::h5l::H5Lvisit2(grp, by, order, Some(cb), data);
    }
}

/// Like [`visit`], starting at the group `name` relative to `loc` (`H5Lvisit_by_name`);
/// names passed to `cb` are relative to that group.
///
/// # Safety
/// Valid ids, NUL-terminated `name`, `data` what `cb` expects; libhdf5 lock held.
pub unsafe fn visit_by_name(loc: hid_t, name: *const c_char, cb: LinkCallback, data: *mut c_void, lapl: hid_t) -> herr_t {
    let (by, order) = (H5_index_t::H5_INDEX_NAME, H5_iter_order_t::H5_ITER_NATIVE);
    // SAFETY: guaranteed by the caller.
    unsafe {
        #[cfg(not(hdf5_1_12))]
        return hdf5_sys::h5l::H5Lvisit_by_name1(loc, name, by, order, Some(cb), data, lapl);
        #[cfg(hdf5_1_12)]
        return hdf5_sys::h5l::H5Lvisit_by_name2(loc, name, by, order, Some(cb), data, lapl);
    }
}

/// Reads the stored (still filtered) bytes of the chunk of `dset` whose first element is at
/// `offset` into `buf`, which has room for `cap` bytes, and its filter mask into `*filters`
/// (`H5Dread_chunk`). Returns libhdf5's status and the chunk's stored size in bytes as
/// libhdf5 knows it at the read: on 2.x `H5Dread_chunk2` reports it (and reads nothing when it
/// exceeds `cap`); 1.x cannot tell, so there it is `cap`, the size the caller took from the
/// chunk index (`H5Dget_chunk_storage_size`), which is what 1.x writes. The caller must
/// treat a size other than `cap` as a failure (nothing, or not that many bytes, was read).
///
/// # Safety
/// Valid dataset id; `offset` has the dataset's rank; `buf` is writable for `cap` bytes and
/// `cap` is at least the chunk's stored size (1.x writes that many bytes unchecked); libhdf5
/// lock held.
pub unsafe fn read_chunk(dset: hid_t, offset: *const hsize_t, filters: &mut u32, buf: *mut u8, cap: usize) -> (herr_t, usize) {
    let dxpl = hdf5_sys::h5p::H5P_DEFAULT;
    // SAFETY: guaranteed by the caller.
    #[cfg(not(hdf5_2))]
    let (r, size) = (unsafe { hdf5_sys::h5d::H5Dread_chunk1(dset, dxpl, offset, filters, buf as *mut c_void) }, cap);
    #[cfg(hdf5_2)]
    let (r, size) = {
        let mut size = cap;
        // SAFETY: guaranteed by the caller; libhdf5 writes at most `size` bytes.
        (unsafe { hdf5_sys::h5d::H5Dread_chunk2(dset, dxpl, offset, filters, buf as *mut c_void, &mut size) }, size)
    };
    (r, size)
}

/// File address and total size in bytes of the object header of the object `name` (relative
/// to `loc`), or `None` when libhdf5 fails (error stack set). 1.10: `H5Oget_info_by_name2`
/// (`H5O_info1_t`: address and header info); >= 1.12: the object's token
/// (`H5Oget_info_by_name3`) turned into an address (`H5VLnative_token_to_addr`) and the header
/// info of `H5Oget_native_info_by_name`.
///
/// # Safety
/// Valid id, NUL-terminated `name`; libhdf5 lock held.
pub unsafe fn object_header(loc: hid_t, name: *const c_char, lapl: hid_t) -> Option<(u64, u64)> {
    #[cfg(not(hdf5_1_12))]
    {
        use hdf5_sys::h5o::{H5O_info1_t, H5Oget_info_by_name2, H5O_INFO_BASIC, H5O_INFO_HDR};
        let mut info = H5O_info1_t::default();
        // SAFETY: guaranteed by the caller; `info` is writable.
        let r = unsafe { H5Oget_info_by_name2(loc, name, &mut info, H5O_INFO_BASIC | H5O_INFO_HDR, lapl) };
        (r >= 0).then_some((info.addr, info.hdr.space.total))
    }
    #[cfg(hdf5_1_12)]
    {
        use hdf5_sys::h5::{haddr_t, H5_ih_info_t};
        use hdf5_sys::h5o::{H5O_hdr_info_t, H5O_info2_t, H5O_token_t, H5Oget_info_by_name3, H5O_INFO_BASIC, H5O_NATIVE_INFO_HDR};
        /// `H5O_native_info_t` (hdf5-sys's has private fields).
        #[repr(C)]
        struct NativeInfo {
            hdr: H5O_hdr_info_t,
            meta_size: [H5_ih_info_t; 2],
        }
        unsafe extern "C" {
            fn H5Oget_native_info_by_name(loc_id: hid_t, name: *const c_char, oinfo: *mut NativeInfo, fields: std::ffi::c_uint, lapl_id: hid_t) -> herr_t;
            fn H5VLnative_token_to_addr(loc_id: hid_t, token: H5O_token_t, addr: *mut haddr_t) -> herr_t;
        }
        // SAFETY: guaranteed by the caller; the out-structs are plain data, zeroed, writable.
        unsafe {
            let mut info: H5O_info2_t = std::mem::zeroed();
            let mut native: NativeInfo = std::mem::zeroed();
            let mut addr: haddr_t = 0;
            let ok = H5Oget_info_by_name3(loc, name, &mut info, H5O_INFO_BASIC, lapl) >= 0
                && H5VLnative_token_to_addr(loc, info.token, &mut addr) >= 0
                && H5Oget_native_info_by_name(loc, name, &mut native, H5O_NATIVE_INFO_HDR, lapl) >= 0;
            ok.then_some((addr, native.hdr.space.total))
        }
    }
}

/// The identity of the open object `obj` in this process: libhdf5's number of its file (the
/// same for every id opened on one file: they share it) and its object header's address
/// (1.10: `H5Oget_info2`, as little-endian bytes) or token (>= 1.12: `H5Oget_info3`), basic
/// fields only; `None` when libhdf5 fails (error stack set).
///
/// # Safety
/// Valid id; libhdf5 lock held.
pub unsafe fn object_identity(obj: hid_t) -> Option<(u64, [u8; 16])> {
    #[cfg(not(hdf5_1_12))]
    {
        use hdf5_sys::h5o::{H5O_info1_t, H5Oget_info2, H5O_INFO_BASIC};
        let mut info = H5O_info1_t::default();
        // SAFETY: guaranteed by the caller; `info` is writable.
        let r = unsafe { H5Oget_info2(obj, &mut info, H5O_INFO_BASIC) };
        let mut token = [0u8; 16];
        token[..8].copy_from_slice(&info.addr.to_le_bytes());
        // (`c_ulong`: 32 bits on Windows.)
        #[allow(clippy::unnecessary_cast)]
        let fileno = info.fileno as u64;
        (r >= 0).then_some((fileno, token))
    }
    #[cfg(hdf5_1_12)]
    {
        use hdf5_sys::h5o::{H5O_info2_t, H5Oget_info3, H5O_INFO_BASIC};
        // SAFETY: guaranteed by the caller; the out-struct is plain data, zeroed, writable.
        unsafe {
            let mut info: H5O_info2_t = std::mem::zeroed();
            if H5Oget_info3(obj, &mut info, H5O_INFO_BASIC) < 0 {
                return None;
            }
            // `H5O_token_t` is 16 opaque bytes (`H5O_MAX_TOKEN_SIZE`), repr(C).
            #[allow(clippy::unnecessary_cast)]
            let fileno = info.fileno as u64;
            Some((fileno, std::mem::transmute::<hdf5_sys::h5o::H5O_token_t, [u8; 16]>(info.token)))
        }
    }
}

/// The type of the object `name` (relative to `loc`, links followed) from its object header
/// (`H5Oget_info_by_name`, basic fields: no message of the header is decoded, unlike
/// `H5Oopen`, which decodes a dataset's layout), or `None` when libhdf5 fails (error stack
/// set). 1.10: `H5Oget_info_by_name2` (`H5O_info1_t`); >= 1.12: `H5Oget_info_by_name3`.
///
/// # Safety
/// Valid id, NUL-terminated `name`; libhdf5 lock held.
pub unsafe fn object_type(loc: hid_t, name: *const c_char, lapl: hid_t) -> Option<hdf5_sys::h5o::H5O_type_t> {
    #[cfg(not(hdf5_1_12))]
    {
        use hdf5_sys::h5o::{H5O_info1_t, H5Oget_info_by_name2, H5O_INFO_BASIC};
        let mut info = H5O_info1_t::default();
        // SAFETY: guaranteed by the caller; `info` is writable.
        let r = unsafe { H5Oget_info_by_name2(loc, name, &mut info, H5O_INFO_BASIC, lapl) };
        (r >= 0).then_some(info.type_)
    }
    #[cfg(hdf5_1_12)]
    {
        use hdf5_sys::h5o::{H5O_info2_t, H5Oget_info_by_name3, H5O_INFO_BASIC};
        // SAFETY: guaranteed by the caller; the out-struct is plain data, zeroed, writable.
        unsafe {
            let mut info: H5O_info2_t = std::mem::zeroed();
            (H5Oget_info_by_name3(loc, name, &mut info, H5O_INFO_BASIC, lapl) >= 0).then_some(info.type_)
        }
    }
}

/// The id of libhdf5's default file driver, sec2 (C's `H5FD_SEC2`): `H5FD_sec2_init()`
/// (registers the driver on first use) on 1.x, 1.14 included (its `H5FD_SEC2` is
/// `H5FDperform_init(H5FD_sec2_init)`); the global `H5FD_SEC2_id_g`, set when the library
/// initialises, from 2.0 on (the init function is no longer exported).
///
/// # Safety
/// libhdf5 is initialised (an id of it is open) and the caller holds the libhdf5 lock.
#[cfg(not(hdf5_2))]
pub unsafe fn sec2_driver_id() -> hid_t {
    extern "C" {
        fn H5FD_sec2_init() -> hid_t;
    }
    // SAFETY: guaranteed by the caller; a plain libhdf5 call without arguments.
    unsafe { H5FD_sec2_init() }
}

/// [`sec2_driver_id`] from libhdf5 2.0 on: the global `H5FD_SEC2_id_g`.
///
/// # Safety
/// As for the 1.x function of this name.
#[cfg(hdf5_2)]
pub unsafe fn sec2_driver_id() -> hid_t {
    extern "C" {
        static H5FD_SEC2_id_g: hid_t;
    }
    // SAFETY: guaranteed by the caller: the library is initialised, so the global is set and
    // no longer written; reading a plain integer.
    unsafe { H5FD_SEC2_id_g }
}

/// The type of the link `name` (relative to `loc`; the last component is not followed) and,
/// for soft, external and user-defined links, the size in bytes of its value
/// (`H5Lget_info` on 1.10, `H5Lget_info2` on >= 1.12); `None` when libhdf5 fails (error stack
/// set).
///
/// # Safety
/// Valid ids, NUL-terminated `name`; libhdf5 lock held.
pub unsafe fn link_info(loc: hid_t, name: *const c_char, lapl: hid_t) -> Option<(H5L_type_t, usize)> {
    #[cfg(not(hdf5_1_12))]
    // SAFETY: guaranteed by the caller; `info` is plain data, writable; `val_size` is read
    // only for the link types whose union member it is.
    unsafe {
        let mut info = hdf5_sys::h5l::H5L_info1_t::default();
        if hdf5_sys::h5l::H5Lget_info1(loc, name, &mut info, lapl) < 0 {
            return None;
        }
        let size = if info.type_ == H5L_type_t::H5L_TYPE_HARD { 0 } else { *info.u.val_size() };
        Some((info.type_, size))
    }
    #[cfg(hdf5_1_12)]
    // SAFETY: as above.
    unsafe {
        let mut info: hdf5_sys::h5l::H5L_info2_t = std::mem::zeroed();
        if hdf5_sys::h5l::H5Lget_info2(loc, name, &mut info, lapl) < 0 {
            return None;
        }
        let size = if info.type_ == H5L_type_t::H5L_TYPE_HARD { 0 } else { *info.u.val_size() };
        Some((info.type_, size))
    }
}
