//! vh5's own view of an open dataset's file: the file descriptor libhdf5 reads through
//! ([`FileView`]) and, with libhdf5 1.10, the dataset's version-1 chunk B-tree
//! ([`super::chunk_btree`]), opened once per open dataset ([`DatasetFile`]) and shared by
//! everything that reads them for it: the first-use key check below, the chunk index build
//! ([`super::chunk_index`]) and the stored-size checks ([`super::stored_sizes`]).
//!
//! **The key check** (libhdf5 1.10 only; libhdf5 >= 1.14 checks keys itself, 1.12 gives no
//! object header address): libhdf5 >= 2.0 refuses a chunk B-tree key whose offsets are not
//! multiples of the layout message's dimensions ("bad coordinate offset",
//! `H5D__btree_decode_key`, for every key of every node it loads); 1.10 reads past such a key,
//! its chunk on another grid or as never written: the fill value, with `VH5_OK` (conformance
//! seeds 46 and 53 at 8000 cases; new-user tryouts, session 14). vh5 checks every key of every
//! node it reads (the chunk B-tree walker, `chunk_btree::Reader::walk` and `lookup`):
//!
//! - at a dataset's first use (any read, any planner, any file intent): the whole tree, when it
//!   has at most `FIRST_USE_NODES` nodes ([`first_use_damage`]);
//! - a larger tree is checked whole when vh5 walks it for the chunk index or the stored-size
//!   check; reads that do neither check the nodes on the way to each chunk they read
//!   (`Opened::check_chunk_keys`, libhdf5 1.10 builds: the chunk planner without an index, and through the
//!   stored-size check the reads libhdf5 makes of unfiltered datasets), until so many lookups
//!   were made that one walk of the whole tree costs less.

use std::ffi::{c_int, c_void};
use std::fs::File;
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::fs::FileExt;
#[cfg(not(hdf5_1_14))]
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use hdf5_sys::h5i::hid_t;

#[cfg(not(hdf5_1_14))]
use super::chunk_btree::{Fault, Layout, Tree};
#[cfg(not(hdf5_1_14))]
use super::chunk_v4::V4Index;
use super::handle::Handle;
use super::lock::H5Lock;

/// What vh5 needs to read an open file's bytes itself, gathered once per use from libhdf5:
/// the file descriptor libhdf5 reads through (duplicated: it stays valid after the lock is
/// released), the file's length, the base address (the superblock's offset, i.e. the user
/// block's size) and the sizes of addresses and lengths. Only for the default sec2 driver.
#[derive(Debug)]
pub struct FileView {
    pub file: File,
    pub len: u64,
    pub base: u64,
    /// Size of file addresses / lengths (`H5Pget_sizes`): 2, 4 or 8 bytes.
    pub sa: usize,
    pub ss: usize,
}

impl FileView {
    /// The view of the file holding `id` (any id in the file). One `H5Iget_file_id`, one
    /// access and one creation property list: `Err(reason)` for other drivers than sec2, a
    /// failing call (its error stack cleared) or no superblock signature at the user block's
    /// end. The caller holds the lock.
    pub fn open(lock: &H5Lock, id: hid_t) -> std::result::Result<FileView, String> {
        use hdf5_sys::h5f::{H5Fget_access_plist, H5Fget_create_plist, H5Fget_vfd_handle};
        use hdf5_sys::h5p::{H5Pget_driver, H5Pget_sizes, H5Pget_userblock};
        let failed = |what: &str| {
            super::error::clear_stack(lock);
            format!("{what} failed")
        };
        // SAFETY: valid id; lock held; out-pointers are locals.
        unsafe {
            let f = Handle::new(lock, hdf5_sys::h5i::H5Iget_file_id(id), "H5Iget_file_id").map_err(|x| x.message)?;
            let fapl = Handle::new(lock, H5Fget_access_plist(f.id()), "H5Fget_access_plist").map_err(|x| x.message)?;
            if H5Pget_driver(fapl.id()) != super::compat::sec2_driver_id() {
                super::error::clear_stack(lock);
                return Err("the file is not open through the default sec2 driver".into());
            }
            let mut handle: *mut c_void = std::ptr::null_mut();
            if H5Fget_vfd_handle(f.id(), fapl.id(), &mut handle) < 0 || handle.is_null() {
                return Err(failed("H5Fget_vfd_handle"));
            }
            let fcpl = Handle::new(lock, H5Fget_create_plist(f.id()), "H5Fget_create_plist").map_err(|x| x.message)?;
            let (mut base, mut sa, mut ss) = (0u64, 0usize, 0usize);
            if H5Pget_userblock(fcpl.id(), &mut base) < 0 {
                return Err(failed("H5Pget_userblock"));
            }
            if H5Pget_sizes(fcpl.id(), &mut sa, &mut ss) < 0 {
                return Err(failed("H5Pget_sizes"));
            }
            if !matches!(sa, 2 | 4 | 8) || !matches!(ss, 2 | 4 | 8) {
                return Err(format!("address size {sa} / length size {ss} bytes"));
            }
            let fd = *(handle as *const c_int);
            let dup = libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 0);
            if dup < 0 {
                return Err(format!("duplicating libhdf5's file descriptor: {}", std::io::Error::last_os_error()));
            }
            let file = File::from(OwnedFd::from_raw_fd(dup));
            let len = file.metadata().map_err(|x| format!("fstat: {x}"))?.len();
            let mut sig = [0u8; 8];
            if base.checked_add(8).is_none_or(|x| x > len) || file.read_exact_at(&mut sig, base).is_err() || &sig != b"\x89HDF\r\n\x1a\n" {
                return Err(format!("no superblock signature at the user block's end (offset {base})"));
            }
            Ok(FileView { file, len, base, sa, ss })
        }
    }

    /// Positioned reads of this file (addresses relative to the base address).
    pub(super) fn reader(&self) -> super::chunk_btree::Reader<'_> {
        super::chunk_btree::Reader { file: &self.file, file_len: self.len, base: self.base, sa: self.sa, ss: self.ss }
    }
}

/// vh5's view of one open dataset's file and chunk B-tree, opened on first use
/// ([`DatasetFile::get`]) and kept with the dataset's cached facts (`meta::DatasetMeta`) while
/// it is open, for files open read-only (the only ones vh5 reads this way after the first use).
#[derive(Default)]
pub struct DatasetFile(OnceLock<std::result::Result<Arc<Opened>, String>>);

impl std::fmt::Debug for DatasetFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("DatasetFile").field(&self.0.get().map(|o| o.is_ok())).finish()
    }
}

/// An opened [`DatasetFile`].
#[derive(Debug)]
pub struct Opened {
    pub view: FileView,
    /// The dataset's chunk B-tree (layout message version 3), or why vh5 has none.
    #[cfg(not(hdf5_1_14))]
    pub tree: std::result::Result<Tree, String>,
    /// The dataset's layout message version 4 index, when it is one vh5 reads
    /// ([`super::chunk_v4`]; `tree` then says why there is no B-tree).
    #[cfg(not(hdf5_1_14))]
    pub v4: Option<V4Index>,
    /// Every key of the tree checked (a walk of the whole tree found none damaged).
    #[cfg(not(hdf5_1_14))]
    keys_sound: AtomicBool,
    /// Lookups made by [`Opened::check_chunk_keys`], then its one walk of the whole tree.
    #[cfg(not(hdf5_1_14))]
    lookups: AtomicU64,
    #[cfg(not(hdf5_1_14))]
    walked: OnceLock<std::result::Result<bool, Fault>>,
}

/// The dataset's parsed layout (1.14+ builds keep none).
#[cfg(not(hdf5_1_14))]
type TreeField = std::result::Result<Layout, String>;
#[cfg(hdf5_1_14)]
type TreeField = ();

impl DatasetFile {
    /// The dataset's file view (and its chunk B-tree), opened now when this is the first use;
    /// `Err(reason)` when vh5 cannot read the file itself (another driver, a failing call).
    /// `dset`: the open dataset. Lock held.
    pub fn get(&self, lock: &H5Lock, dset: hid_t) -> std::result::Result<&Arc<Opened>, String> {
        self.0.get_or_init(|| Opened::open(lock, dset).map(Arc::new)).as_ref().map_err(Clone::clone)
    }
}

impl Opened {
    fn open(lock: &H5Lock, dset: hid_t) -> std::result::Result<Opened, String> {
        let view = FileView::open(lock, dset)?;
        #[cfg(not(hdf5_1_14))]
        let tree = object_header_address(lock, dset).and_then(|oh| view.reader().layout(oh));
        #[cfg(hdf5_1_14)]
        let tree = ();
        Ok(Opened::new(view, tree))
    }

    /// `view` and (1.10 builds) its dataset's parsed layout, nothing checked yet.
    fn new(view: FileView, #[cfg_attr(hdf5_1_14, allow(unused_variables))] tree: TreeField) -> Opened {
        Opened {
            view,
            #[cfg(not(hdf5_1_14))]
            tree: match &tree {
                Ok(Layout::BTree(t)) => Ok(t.clone()),
                Ok(Layout::V4(_)) => Err("layout message version 4: no version-1 B-tree".into()),
                Err(why) => Err(why.clone()),
            },
            #[cfg(not(hdf5_1_14))]
            v4: match tree {
                Ok(Layout::V4(ix)) => Some(ix),
                _ => None,
            },
            #[cfg(not(hdf5_1_14))]
            keys_sound: AtomicBool::new(false),
            #[cfg(not(hdf5_1_14))]
            lookups: AtomicU64::new(0),
            #[cfg(not(hdf5_1_14))]
            walked: OnceLock::new(),
        }
    }

    /// A view of `file` (base address 0, 8-byte addresses) and no tree, for unit tests.
    #[cfg(test)]
    pub fn for_tests(file: File) -> Opened {
        let len = file.metadata().map_or(0, |m| m.len());
        #[cfg(not(hdf5_1_14))]
        let tree = Err("none".into());
        #[cfg(hdf5_1_14)]
        let tree = ();
        Opened::new(FileView { file, len, base: 0, sa: 8, ss: 8 }, tree)
    }

    /// Record that a walk of the whole tree checked every key and found none damaged.
    #[cfg(not(hdf5_1_14))]
    pub fn keys_checked(&self) {
        self.keys_sound.store(true, Ordering::Relaxed);
    }

    /// `Fault::Damaged` when a key of the chunk B-tree on the way to the chunk whose first
    /// element is at `origin` is damaged (see the module docs); `Ok` when the tree's keys are
    /// known sound, no such key was met or vh5 cannot read the tree (no verdict). After
    /// [`DEEP_WALK_AFTER`] lookups (more on a dataset of more than 256 times as many chunks,
    /// `nchunks` on its grid) the whole tree is walked once instead (a lookup reads a node per
    /// level, a walk one node per ~32 to 64 chunks). No lock needed.
    #[cfg(not(hdf5_1_14))]
    pub fn check_chunk_keys(&self, origin: &[u64], nchunks: u64) -> std::result::Result<(), Fault> {
        if self.keys_sound.load(Ordering::Relaxed) {
            return Ok(());
        }
        let Ok(tree) = &self.tree else { return Ok(()) };
        if self.lookups.fetch_add(1, Ordering::Relaxed) >= DEEP_WALK_AFTER.max(nchunks / 256) {
            let max_nodes = nchunks.saturating_mul(2).saturating_add(64);
            match self.walked.get_or_init(|| self.view.reader().walk(tree, max_nodes, &mut |_, _, _, _| Ok(()))) {
                Ok(true) => {
                    self.keys_checked();
                    return Ok(());
                }
                Err(Fault::Damaged(why)) => return Err(Fault::Damaged(why.clone())),
                Ok(false) | Err(Fault::Declined(_)) => {} // looked up one by one
            }
        }
        let mut target = origin.to_vec();
        target.push(0);
        match self.view.reader().lookup(tree, &target) {
            Err(Fault::Damaged(why)) => Err(Fault::Damaged(why)),
            _ => Ok(()),
        }
    }
}

/// Nodes of a dataset's chunk B-tree whose every key is checked at its first use
/// ([`first_use_damage`]): 1.3 to 2.5 us a node (one positioned read of ~2 KB, 65 keys), so
/// at most ~20 ms; the tree of 262,144 1-D chunks h5py writes (libver earliest) has 4,683
/// nodes, checked whole in ~11 ms (4,096 chunks: 75 nodes, ~0.1 ms; the first-use check read
/// 64 nodes before session 15). A larger tree is checked as the module docs say.
#[cfg(not(hdf5_1_14))]
pub const FIRST_USE_NODES: u64 = 8192;

/// Lookups of one dataset's chunks by [`Opened::check_chunk_keys`] before its whole tree is
/// walked, at least.
#[cfg(not(hdf5_1_14))]
pub const DEEP_WALK_AFTER: u64 = 64;

/// Why libhdf5 >= 2.0 refuses the chunk B-tree of `dset` ("bad coordinate offset"): a key of
/// the tree (any node, the right bound and the element offset included) whose offsets are not
/// multiples of the layout message's dimensions, or `None` (also when vh5 cannot read the
/// tree: no verdict). Every key of a tree of at most [`FIRST_USE_NODES`] nodes is checked, of
/// a larger one those of its first [`FIRST_USE_NODES`] nodes (see the module docs for the
/// rest). `file`: the dataset's [`DatasetFile`]. Lock held.
#[cfg(not(hdf5_1_14))]
pub fn first_use_damage(lock: &H5Lock, dset: hid_t, file: &DatasetFile) -> Option<String> {
    let o = file.get(lock, dset).ok()?;
    let tree = o.tree.as_ref().ok()?;
    match o.view.reader().walk(tree, FIRST_USE_NODES, &mut |_, _, _, _| Ok(())) {
        Ok(true) => {
            o.keys_checked();
            None
        }
        Ok(false) | Err(Fault::Declined(_)) => None,
        Err(Fault::Damaged(why)) => Some(why),
    }
}

/// libhdf5 >= 1.14 checks the keys itself.
#[cfg(hdf5_1_14)]
pub fn first_use_damage(_lock: &H5Lock, _dset: hid_t, _file: &DatasetFile) -> Option<String> {
    None
}

/// The address of `dset`'s object header (relative to the base address).
#[cfg(not(hdf5_1_12))]
pub(super) fn object_header_address(lock: &H5Lock, dset: hid_t) -> std::result::Result<u64, String> {
    let mut info = std::mem::MaybeUninit::<hdf5_sys::h5o::H5O_info1_t>::zeroed();
    // SAFETY: valid dataset id; lock held; `info` is a local of the struct libhdf5 1.10 fills.
    if unsafe { hdf5_sys::h5o::H5Oget_info2(dset, info.as_mut_ptr(), hdf5_sys::h5o::H5O_INFO_BASIC) } < 0 {
        super::error::clear_stack(lock);
        return Err("H5Oget_info failed".into());
    }
    // SAFETY: filled by libhdf5 above (zeroed before).
    Ok(unsafe { info.assume_init() }.addr)
}

/// On libhdf5 1.12 object addresses are tokens: no walk of the file's own index (and no
/// `H5Dchunk_iter` in the bindings before 1.14).
#[cfg(all(hdf5_1_12, not(hdf5_1_14)))]
pub(super) fn object_header_address(_lock: &H5Lock, _dset: hid_t) -> std::result::Result<u64, String> {
    Err("libhdf5 >= 1.12: vh5 reads no object header address".into())
}
