//! Arguments sharing memory with what a call writes (found by a new-user tryout): slice tables
//! lying inside the destination array of a many-slice copy or read, and payload outputs lying
//! inside the message they are decoded from.
//!
//! Before the fix, a copy validated every row and then re-read a later row's table entries
//! after an earlier row had written over them: it wrote outside its destination (and crashed
//! with a large value). Now the tables are always copied before anything is written (a
//! second mapping of the destination's pages aliases it at other addresses, so no address
//! test can tell): the result is the one of the same call with the tables elsewhere, and
//! nothing outside the destination changes. Calls that write outputs before or while they
//! parse an input (payload messages, string arguments) refuse an output overlapping it.

mod common;

use common::{create_file, ffi_close, ffi_open, last_error, DsSpec, TempDir};
use vh5::dtype::Dtype;
use vh5::ffi::document::payload_decode_document;
use vh5::ffi::hdf5::{vh5_array, vh5_read_many_slices};
use vh5::ffi::payload::{payload_copy_data, payload_decode_count, payload_decode_view, payload_view};
use vh5::ffi::slices_write::{vh5_copy_many_slices, vh5_write_many_slices};
use vh5::ffi::vh5_status;

/// A 1-D uint64 `vh5_array` of `n` elements at `base` (`shape` must outlive the call).
fn arr(base: *mut u64, n: usize, shape: &[u64; 1]) -> vh5_array {
    vh5_array { base: base.cast(), base_len: n * 8, offset: 0, dtype: Dtype::UInt64.code(), itemsize: 8, ndim: 1, shape: shape.as_ptr(), strides: std::ptr::null() }
}

/// The tryout's case: `big[..64]` is the destination and holds the tables at 0..2 (src_start),
/// 2..4 (dst_start) and 4..6 (count); row 0 writes `src` into `dst[2..4]`, i.e. over row 1's
/// dst_start (40 -> 100, past the 64 elements of dst).
fn tables_in_dst(big: &mut [u64; 128]) {
    big.fill(0);
    big[..6].copy_from_slice(&[0, 0, 2, 40, 2, 1]);
}

/// A file `t.h5` in `dir` holding the u64 values [2, 100, 5, 6] as datasets "contiguous",
/// "chunked" (chunks of 2) and "gzip" (chunks of 2, gzip 4); returns its path.
fn three_layouts(dir: &TempDir) -> std::path::PathBuf {
    let path = dir.path("t.h5");
    let data: Vec<u8> = [2u64, 100, 5, 6].iter().flat_map(|v| v.to_ne_bytes()).collect();
    let mut chunked = DsSpec::new("chunked", &[4], Dtype::UInt64, Some(&data));
    chunked.chunk = Some(vec![2]);
    let mut gzip = DsSpec::new("gzip", &[4], Dtype::UInt64, Some(&data));
    (gzip.chunk, gzip.gzip) = (Some(vec![2]), Some(4));
    create_file(&path, &[DsSpec::new("contiguous", &[4], Dtype::UInt64, Some(&data)), chunked, gzip]);
    path
}

/// After reading rows 0 and 1 of the tables [0, 0 | 2, 40 | 2, 1] laid in `big` itself:
/// row 0 (values 2, 100) overwrote row 1's dst_start, and row 1 still went to 40 as passed.
fn check_first_row_rewrote_second(big: &[u64], name: &str) {
    assert_eq!(&big[..6], &[0, 0, 2, 100, 2, 1], "{name}");
    assert_eq!(big[40], 2, "{name}: row 1 must use its dst_start as passed (40)");
    assert!(big[64..].iter().all(|&v| v == 0), "{name}: written outside dst");
}

#[test]
fn copy_tables_inside_destination_are_read_before_any_write() {
    let mut src = [2u64, 100];
    let mut big = [0u64; 128];
    tables_in_dst(&mut big);
    let (sshape, dshape) = ([2u64], [64u64]);
    let p = big.as_mut_ptr();
    let (s, d) = (arr(src.as_mut_ptr(), 2, &sshape), arr(p, 64, &dshape));
    // SAFETY: the arrays describe live buffers; the tables are 2 x 1 values inside `big`.
    let st = unsafe { vh5_copy_many_slices(&s, &d, 2, p, p.add(2), p.add(4), std::ptr::null(), std::ptr::null(), 0) };
    assert_eq!(st, vh5_status::VH5_OK, "{}", last_error());
    // The same call with the tables elsewhere (the reference).
    let mut want = [0u64; 64];
    want[..6].copy_from_slice(&[0, 0, 2, 40, 2, 1]);
    want[2..4].copy_from_slice(&src);
    want[40] = 2;
    assert_eq!(&big[..64], &want[..]);
    assert!(big[64..].iter().all(|&v| v == 0), "written outside dst: {:?}", &big[64..]);
}

#[test]
fn read_tables_inside_destination_are_read_before_any_write() {
    let dir = TempDir::new("aliasing");
    let path = three_layouts(&dir);
    for name in ["contiguous", "chunked", "gzip"] {
        let (f, ds) = ffi_open(&path, name);
        let mut big = [0u64; 128];
        tables_in_dst(&mut big);
        let dshape = [64u64];
        let p = big.as_mut_ptr();
        let d = arr(p, 64, &dshape);
        // SAFETY: as in the copy test.
        let st = unsafe { vh5_read_many_slices(ds, &d, 2, p, p.add(2), p.add(4), std::ptr::null(), std::ptr::null(), 0) };
        assert_eq!(st, vh5_status::VH5_OK, "{name}: {}", last_error());
        check_first_row_rewrote_second(&big, name);
        ffi_close(&[ds, f]);
    }
}

#[test]
fn payload_outputs_inside_the_message_are_refused() {
    // tag 86 (float64 little-endian typed array) of [1.5], then room used as the output.
    let mut m = vec![0xd8u8, 86, 0x48];
    m.extend_from_slice(&1.5f64.to_le_bytes());
    m.extend_from_slice(&[0u8; 16]);
    let len = 11;
    let before = m.clone();
    let mut w = 7usize;
    let p = m.as_mut_ptr();
    // SAFETY: `m` is live; the output lies inside it (the case refused).
    let st = unsafe { payload_copy_data(p, len, p.add(3).cast(), 8, &mut w) };
    assert_eq!((st, w), (vh5_status::VH5_ERR_INVALID_ARGUMENT, 0));
    let msg = last_error();
    assert!(msg.contains("`out`") && msg.contains("byte offset 3"), "{msg}");
    // SAFETY: as above.
    let st = unsafe { payload_decode_count(p, len, p.cast(), 1, &mut w) };
    assert_eq!(st, vh5_status::VH5_ERR_INVALID_ARGUMENT);
    let (mut ni, mut nv) = (9usize, 9usize);
    // SAFETY: as above; the items output (capacity 1) starts inside the message.
    let st = unsafe { payload_decode_document(p, len, 0, p.add(4).cast(), 1, std::ptr::null_mut(), 0, &mut ni, &mut nv) };
    assert_eq!((st, ni, nv), (vh5_status::VH5_ERR_INVALID_ARGUMENT, 0, 0));
    assert!(last_error().contains("`items`"), "{}", last_error());
    assert_eq!(m, before, "nothing written");
    // Right after the message (not overlapping): accepted.
    // SAFETY: as above; bytes 11..19 are outside the message's 11 bytes.
    let st = unsafe { payload_copy_data(p, len, p.add(len).cast(), 8, &mut w) };
    assert_eq!((st, w), (vh5_status::VH5_OK, 8), "{}", last_error());
    assert_eq!(f64::from_ne_bytes(m[len..len + 8].try_into().unwrap()), 1.5);
}

/// Two shared mappings of the same `bytes`-byte memfd: different addresses, same memory (what
/// two `np.memmap`s of one file are). Unmapped on drop.
struct DoubleMap {
    a: *mut u64,
    b: *mut u64,
    bytes: usize,
}

impl DoubleMap {
    fn new(bytes: usize) -> DoubleMap {
        // SAFETY: plain libc calls with valid arguments; results checked.
        unsafe {
            let fd = libc::memfd_create(c"vh5-alias".as_ptr(), 0);
            assert!(fd >= 0, "memfd_create");
            assert_eq!(libc::ftruncate(fd, bytes as libc::off_t), 0);
            let map = || libc::mmap(std::ptr::null_mut(), bytes, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, fd, 0);
            let (a, b) = (map(), map());
            libc::close(fd);
            assert!(a != libc::MAP_FAILED && b != libc::MAP_FAILED && a != b);
            DoubleMap { a: a.cast(), b: b.cast(), bytes }
        }
    }
}

impl Drop for DoubleMap {
    fn drop(&mut self) {
        // SAFETY: both mappings were made by `new` with these sizes.
        unsafe {
            libc::munmap(self.a.cast(), self.bytes);
            libc::munmap(self.b.cast(), self.bytes);
        }
    }
}

/// The tryout's case through a second mapping: the destination is the first 64 elements of
/// mapping `a`, the tables are read through mapping `b` (other addresses, the same pages).
/// An address comparison saw no overlap and borrowed the tables: row 0 changed row 1's
/// dst_start to 100 and the copy wrote past dst. Tables are now always copied first.
#[test]
fn copy_tables_in_a_second_mapping_of_the_destination_are_a_snapshot() {
    let m = DoubleMap::new(4096);
    // SAFETY: both mappings hold 512 u64; `a` is written only by vh5 during the call.
    let (big, tabs) = unsafe { (std::slice::from_raw_parts_mut(m.a, 512), m.b) };
    big[..6].copy_from_slice(&[0, 0, 2, 40, 2, 1]);
    let mut src = [2u64, 100];
    let (sshape, dshape) = ([2u64], [64u64]);
    let (s, d) = (arr(src.as_mut_ptr(), 2, &sshape), arr(m.a, 64, &dshape));
    // SAFETY: live buffers; the tables are 2 x 1 values in the second mapping.
    let st = unsafe { vh5_copy_many_slices(&s, &d, 2, tabs, tabs.add(2), tabs.add(4), std::ptr::null(), std::ptr::null(), 0) };
    assert_eq!(st, vh5_status::VH5_OK, "{}", last_error());
    assert_eq!(&big[..6], &[0, 0, 2, 100, 2, 1]);
    assert_eq!(big[40], 2, "row 1 must use its dst_start as passed (40)");
    assert!(big[64..].iter().all(|&v| v == 0), "written outside dst");
}

#[test]
fn read_tables_in_a_second_mapping_of_the_destination_are_a_snapshot() {
    let dir = TempDir::new("aliasing-map");
    let path = three_layouts(&dir);
    for name in ["contiguous", "chunked", "gzip"] {
        let (f, ds) = ffi_open(&path, name);
        let m = DoubleMap::new(4096);
        // SAFETY: as in the copy test.
        let (big, tabs) = unsafe { (std::slice::from_raw_parts_mut(m.a, 512), m.b) };
        big[..6].copy_from_slice(&[0, 0, 2, 40, 2, 1]);
        let dshape = [64u64];
        let d = arr(m.a, 64, &dshape);
        // SAFETY: as in the copy test.
        let st = unsafe { vh5_read_many_slices(ds, &d, 2, tabs, tabs.add(2), tabs.add(4), std::ptr::null(), std::ptr::null(), 0) };
        assert_eq!(st, vh5_status::VH5_OK, "{name}: {}", last_error());
        check_first_row_rewrote_second(big, name);
        ffi_close(&[ds, f]);
    }
}

/// A write reads its tables from a mapping of memory it does not write: the rows as passed
/// (the case that completes the three directions; the copy is the same for every call).
#[test]
fn write_tables_in_a_mapping_are_used_as_passed() {
    let dir = TempDir::new("aliasing-write");
    let path = dir.path("t.h5");
    let zeros = vec![0u8; 64 * 8];
    let mut chunked = DsSpec::new("chunked", &[64], Dtype::UInt64, Some(&zeros));
    chunked.chunk = Some(vec![8]);
    create_file(&path, &[chunked]);
    let f = {
        let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
        let mut f = -1i64;
        // SAFETY: a NUL-terminated path and a live out-parameter.
        assert_eq!(unsafe { vh5::ffi::hdf5::vh5_file_open(c.as_ptr(), vh5::ffi::hdf5::VH5_FILE_READ_WRITE, &mut f) }, vh5_status::VH5_OK, "{}", last_error());
        f
    };
    let mut ds = -1i64;
    // SAFETY: as above.
    assert_eq!(unsafe { vh5::ffi::hdf5::vh5_dataset_open(f, c"chunked".as_ptr(), &mut ds) }, vh5_status::VH5_OK, "{}", last_error());
    let m = DoubleMap::new(4096);
    // SAFETY: the mapping holds 512 u64, written only here.
    let big = unsafe { std::slice::from_raw_parts_mut(m.a, 512) };
    big[..6].copy_from_slice(&[0, 0, 2, 40, 2, 1]);
    let mut src = [7u64, 9];
    let sshape = [2u64];
    let s = arr(src.as_mut_ptr(), 2, &sshape);
    // SAFETY: live buffers; the tables are 2 x 1 values in the second mapping.
    let st = unsafe { vh5_write_many_slices(ds, &s, 2, m.b, m.b.add(2), m.b.add(4), std::ptr::null(), std::ptr::null(), 0) };
    assert_eq!(st, vh5_status::VH5_OK, "{}", last_error());
    let mut out = [0u64; 64];
    let oshape = [64u64];
    let o = arr(out.as_mut_ptr(), 64, &oshape);
    let (z, c) = ([0u64], [64u64]);
    // SAFETY: live buffers and one 1-D row.
    let st = unsafe { vh5_read_many_slices(ds, &o, 1, z.as_ptr(), z.as_ptr(), c.as_ptr(), std::ptr::null(), std::ptr::null(), 0) };
    assert_eq!(st, vh5_status::VH5_OK, "{}", last_error());
    let mut want = [0u64; 64];
    (want[2], want[3], want[40]) = (7, 9, 7);
    assert_eq!(out, want);
    ffi_close(&[ds, f]);
}

/// Every output a payload call writes before or while it parses `buf` is refused when it lies
/// inside `buf`, before anything is written: `*written = 0` used to land in the message before
/// it was parsed (a wrong value, status 0), and a view inside the message overwrote the bytes
/// it points at.
#[test]
fn every_payload_output_inside_the_message_is_refused_before_any_write() {
    // tag 86 (float64 little-endian typed array) of [1.5], then 64 spare bytes.
    let mut m = vec![0xd8u8, 86, 0x48];
    m.extend_from_slice(&1.5f64.to_le_bytes());
    m.extend_from_slice(&[0u8; 600]);
    let len = 11;
    let before = m.clone();
    let p = m.as_mut_ptr();
    let mut out = [0u8; 8];
    let mut c = [0i64; 1];
    // SAFETY: `m` is live (603 + 11 bytes); each output lies inside the message's 11 bytes.
    unsafe {
        let w_in: *mut usize = p.add(3).cast();
        let st = payload_copy_data(p, len, out.as_mut_ptr().cast(), 8, w_in);
        assert_eq!(st, vh5_status::VH5_ERR_INVALID_ARGUMENT);
        let msg = last_error();
        assert!(msg.contains("`written`") && msg.contains("byte offset 3"), "{msg}");
        let st = payload_decode_count(p, len, c.as_mut_ptr(), 1, p.add(2).cast());
        assert_eq!(st, vh5_status::VH5_ERR_INVALID_ARGUMENT);
        assert!(last_error().contains("`written`") && last_error().contains("byte offset 2"), "{}", last_error());
        let mut v = std::mem::zeroed::<payload_view>();
        let st = payload_decode_view(p, len, 0, p.add(1).cast());
        assert_eq!(st, vh5_status::VH5_ERR_INVALID_ARGUMENT);
        assert!(last_error().contains("`out`") && last_error().contains("byte offset 1"), "{}", last_error());
        // a view ending inside the message (starting before it) is refused too
        let st = payload_decode_view(p.add(len + 8), len, 0, p.cast());
        assert_eq!(st, vh5_status::VH5_ERR_INVALID_ARGUMENT, "view overlapping the message's start");
        let mut nv = 0usize;
        let st = payload_decode_document(p, len, 0, std::ptr::null_mut(), 0, std::ptr::null_mut(), 0, p.add(4).cast(), &mut nv);
        assert_eq!(st, vh5_status::VH5_ERR_INVALID_ARGUMENT);
        assert!(last_error().contains("`n_items`") && last_error().contains("byte offset 4"), "{}", last_error());
        let mut ni = 0usize;
        let st = payload_decode_document(p, len, 0, std::ptr::null_mut(), 0, std::ptr::null_mut(), 0, &mut ni, p.add(5).cast());
        assert_eq!(st, vh5_status::VH5_ERR_INVALID_ARGUMENT);
        assert!(last_error().contains("`n_views`") && last_error().contains("byte offset 5"), "{}", last_error());
        assert_eq!(m, before, "nothing written");
        // outside the message: accepted, the right values
        let st = payload_decode_view(p, len, 0, &mut v);
        assert_eq!((st, v.nelements, v.data_offset), (vh5_status::VH5_OK, 1, 3), "{}", last_error());
        let st = payload_copy_data(p, len, out.as_mut_ptr().cast(), 8, p.add(len).cast());
        assert_eq!(st, vh5_status::VH5_OK, "{}", last_error());
        assert_eq!((m[len..len + 8].to_vec(), f64::from_ne_bytes(out)), (8usize.to_ne_bytes().to_vec(), 1.5));
    }
}

/// Out-parameters written before a string argument is read are refused inside the string:
/// `*file_out = -1` (or `*len_out = 0`) used to change the path or name before it was used.
#[test]
fn outputs_inside_a_string_argument_are_refused() {
    let mut s = *b"/no/such/file-aaaaaaaa.h5\0";
    let p = s.as_mut_ptr();
    // SAFETY: `s` is live and NUL-terminated; the outputs lie inside it.
    unsafe {
        let st = vh5::ffi::hdf5::vh5_file_open(p.cast(), 0, p.add(8).cast());
        assert_eq!(st, vh5_status::VH5_ERR_INVALID_ARGUMENT);
        assert!(last_error().contains("`file_out`") && last_error().contains("`path`") && last_error().contains("byte offset 8"), "{}", last_error());
        let st = vh5::ffi::hdf5::vh5_dataset_open(1, p.cast(), p.add(16).cast());
        assert_eq!(st, vh5_status::VH5_ERR_INVALID_ARGUMENT);
        assert!(last_error().contains("`dset_out`") && last_error().contains("`name`"), "{}", last_error());
        let st = vh5::ffi::objects::vh5_group_members(1, p.cast(), 0, std::ptr::null_mut(), 0, p.add(8).cast());
        assert_eq!(st, vh5_status::VH5_ERR_INVALID_ARGUMENT);
        assert!(last_error().contains("`len_out`") && last_error().contains("`group`"), "{}", last_error());
        let mut len = 0usize;
        let st = vh5::ffi::objects::vh5_link_get(1, p.cast(), p.add(25), std::ptr::null_mut(), 0, &mut len);
        assert_eq!(st, vh5_status::VH5_ERR_INVALID_ARGUMENT, "the NUL is part of the string");
        assert!(last_error().contains("`kind_out`") && last_error().contains("byte offset 25"), "{}", last_error());
    }
    assert_eq!(&s, b"/no/such/file-aaaaaaaa.h5\0", "nothing written");
    // next to the string: the ordinary error (the file does not exist)
    let mut f = 0i64;
    // SAFETY: as above; `f` is outside the string.
    assert_eq!(unsafe { vh5::ffi::hdf5::vh5_file_open(s.as_ptr().cast(), 0, &mut f) }, vh5_status::VH5_ERR_IO);
    assert_eq!(f, -1);
}
