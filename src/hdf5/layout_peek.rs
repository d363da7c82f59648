//! Refusing a virtual dataset, a datatype message libhdf5 1.10 crashes on
//! ([`super::dtype_peek`]), or a filter pipeline message that runs past its end
//! (`pipeline_damage`), before libhdf5 opens the object. Opening a dataset (`H5Oopen`,
//! `H5Dopen2`) makes libhdf5 decode its layout message; for a virtual dataset that includes
//! the source selections stored in the global heap, and libhdf5 1.10.8 decodes a damaged
//! selection without bounds checks: a segmentation fault or an endless loop inside `H5Oopen`
//! (`H5S_select_deserialize` under `H5D__layout_oh_read`; the conformance suite's seed 3 at
//! 8000 cases, "metadata byte 2117" of a small virtual dataset; the mapping's checksum is
//! verified only after the decode). vh5 refuses virtual datasets by default anyway
//! ([`super::external`]), so it reads the layout message from the object header itself first
//! and refuses without letting libhdf5 open the dataset. Listings find an object's type with
//! `H5Oget_info_by_name`, which decodes no message (see [`super::compat::object_type`]).
//!
//! Formats read (HDF5 file format specification 3.0): the layout message (IV.A.2.i: version 4,
//! class 3 = virtual, then the global heap ID of the mapping: collection address and object
//! index), the global heap collection it points at (III.E: "GCOL", version 1, collection size,
//! then objects of index (2 bytes), reference count (2), reserved (4), size (length), data
//! padded to 8 bytes; index 0 is free space), and of the mapping (libhdf5's
//! `H5D__virtual_load_layout`) only its encoding version, entry count and the first entry's
//! source file and dataset names, to name them in the refusal.
//!
//! The object header address comes from libhdf5 (`H5Oget_info_by_name`), the bytes from the
//! file descriptor libhdf5 uses (sec2 driver only, user block honoured; every read bounded by
//! the file and by 16 MiB, see `chunk_btree::Reader`). When the header cannot be
//! read (another file driver, a header vh5's reader rejects, a shared layout message) the
//! peek says nothing and libhdf5 opens the dataset as before. The datatype check runs on every
//! open; the virtual-dataset refusal not for files opened with `VH5_FILE_ALLOW_EXTERNAL`
//! (their virtual datasets are opened by libhdf5).

use std::ffi::CStr;

use hdf5_sys::h5i::hid_t;

use super::chunk_btree::{le, Reader};
use super::chunk_tree::FileView;
use super::error::clear_stack;
use super::lock::H5Lock;

/// Layout class of a virtual dataset in the layout message.
const CLASS_VIRTUAL: u8 = 3;
/// Mapping entry flag (encoding version 1): the source is the virtual dataset's own file.
const SOURCE_SAME_FILE: u8 = 0x01;

/// What vh5 read from an object's header before letting libhdf5 open it.
#[derive(Debug, Default)]
pub(super) struct Peek {
    /// The object is a virtual dataset: a description of its mapping for the refusal (source
    /// count and first source, or why vh5 could not read them).
    pub virtual_mapping: Option<String>,
    /// Its datatype message is damaged in a way libhdf5 1.10 crashes on
    /// ([`super::dtype_peek`]): the damage.
    pub damaged_type: Option<String>,
    /// Its filter pipeline message runs past its end (`pipeline_damage`): the damage.
    pub damaged_pipeline: Option<String>,
}

/// Peek at the object `name` (relative to `loc`, through the link access list `lapl`): its
/// layout and datatype messages (see the module docs). Nothing found when it is neither, or
/// vh5 cannot read its header. `view` is the file of `loc` ([`FileView::open`], once per
/// file for a listing). The caller holds the lock.
pub(super) fn peek(lock: &H5Lock, view: &FileView, loc: hid_t, name: &CStr, lapl: hid_t) -> Peek {
    // SAFETY: valid id and C string; lock held.
    let Some((oh, _)) = (unsafe { super::compat::object_header(loc, name.as_ptr(), lapl) }) else {
        clear_stack(lock);
        return Peek::default();
    };
    let r = view.reader();
    let Ok([layout, dtype, pipeline]) = r.layout_and_datatype_messages(oh) else {
        return Peek::default();
    };
    let checksummed = r.read(oh, 4, "object header").is_ok_and(|h| h.starts_with(b"OHDR"));
    let damaged_type = dtype.as_deref().and_then(|m| super::dtype_peek::type_damage(m, checksummed));
    let virtual_mapping = layout.filter(|m| m.first().is_some_and(|&v| v >= 4) && m.get(1) == Some(&CLASS_VIRTUAL)).map(|m| match describe(&r, &m) {
        Ok(d) => d,
        Err(why) => format!("whose mapping vh5 could not read ({why}: damaged?)"),
    });
    let damaged_pipeline = pipeline.as_deref().and_then(pipeline_damage);
    Peek { virtual_mapping, damaged_type, damaged_pipeline }
}

/// The error for the object `name` of the file `file` whose datatype message is damaged
/// (`why`, from `Peek::damaged_type`): `Hdf5`.
pub fn damaged_type(file: &str, name: &str, why: &str) -> crate::error::Error {
    crate::error::Error::new(
        crate::error::ErrorKind::Hdf5,
        format!(
            "`{name}` in `{file}`: its datatype message is damaged: {why}; the file is corrupted (libhdf5 >= 2.0 refuses such a type, \
             libhdf5 1.10 crashes on it or reads other values: read by vh5 before libhdf5 opened the object)"
        ),
    )
}

/// Where the filter pipeline message `msg` (its data) breaks a rule libhdf5 >= 2.0 checks
/// while decoding it (`H5O__pline_decode`: "ran off end of input buffer while decoding",
/// "filter name not null terminated", "filter pipeline message has too many filters", "filter
/// name length is not a multiple of eight"), which libhdf5 1.10 does not check: it decodes
/// the names and client data of the filters from the bytes after the message (conformance
/// seed 43 at 8000 cases, "metadata byte 915": a flipped name length of a fletcher32 + nbit
/// pipeline; h5py could not open the dataset, vh5 read it with filters from other bytes).
/// `None` when the message is whole, or of a version vh5 does not read (libhdf5 judges it).
///
/// Format (HDF5 file format specification 3.0, IV.A.2.l): version (1 or 2), filter count,
/// 6 reserved bytes in version 1; per filter: id (2 bytes), name length (2; in version 2
/// only for ids >= 256), flags (2), client data count (2), the name (NUL-terminated; its
/// length a multiple of 8 in version 1), the client data (4 bytes each; version 1 pads an odd
/// count with 4 bytes).
pub(super) fn pipeline_damage(msg: &[u8]) -> Option<String> {
    let version = *msg.first()?;
    if !(1..=2).contains(&version) {
        return None;
    }
    let nfilters = usize::from(*msg.get(1)?);
    if nfilters > 32 {
        return Some(format!("{nfilters} filters (at most 32)"));
    }
    let past = |what: &str, i: usize| Some(format!("filter {i}'s {what} runs past the end of the {}-byte message", msg.len()));
    let mut p = if version == 1 { 8 } else { 2 };
    if p > msg.len() {
        return past("header", 0);
    }
    for i in 0..nfilters {
        let Some(id) = le(msg, p, 2) else { return past("id", i) };
        p += 2;
        let name_len = if version > 1 && id < 256 {
            0
        } else {
            let Some(n) = le(msg, p, 2) else { return past("name length", i) };
            p += 2;
            if version == 1 && n % 8 != 0 {
                return Some(format!("filter {i}'s name length {n} is not a multiple of 8"));
            }
            n as usize
        };
        let Some(ncd) = le(msg, p + 2, 2) else { return past("client data count", i) };
        p += 4;
        if name_len > 0 {
            let rest = msg.get(p..).unwrap_or(&[]);
            if !rest.contains(&0) {
                return Some(format!("filter {i}'s name is not NUL-terminated inside the message"));
            }
            if name_len > rest.len() {
                return past(&format!("name ({name_len} bytes)"), i);
            }
            p += name_len;
        }
        let cd = 4 * ncd as usize + if version == 1 && ncd % 2 == 1 { 4 } else { 0 };
        if cd > msg.len() - p {
            return past(&format!("client data ({ncd} values)"), i);
        }
        p += cd;
    }
    None
}

/// The error for the object `name` of the file `file` whose filter pipeline message is
/// damaged (`why`, from `Peek::damaged_pipeline`): `Hdf5`.
pub fn damaged_pipeline(file: &str, name: &str, why: &str) -> crate::error::Error {
    crate::error::Error::new(
        crate::error::ErrorKind::Hdf5,
        format!(
            "`{name}` in `{file}`: its filter pipeline message is damaged: {why}; the file is corrupted (libhdf5 >= 2.0 refuses such a message, \
             libhdf5 1.10 decodes the bytes after it: read by vh5 before libhdf5 opened the object)"
        ),
    )
}

/// "mapping N source dataset(s), the first `d` in file `f`" from the layout message `msg`.
fn describe(r: &Reader<'_>, msg: &[u8]) -> Result<String, String> {
    let heap = le(msg, 2, r.sa).ok_or("layout message truncated")?;
    let index = le(msg, 2 + r.sa, 4).ok_or("layout message truncated")?;
    let blob = heap_object(r, heap, index)?;
    let version = *blob.first().ok_or("empty mapping")?;
    if version > 1 {
        return Err(format!("mapping encoding version {version}"));
    }
    let count = le(&blob, 1, r.ss).ok_or("mapping truncated")?;
    let mut p = 1 + r.ss;
    let mut flags = 0;
    if version >= 1 {
        flags = *blob.get(p).ok_or("mapping truncated")?;
        p += 1;
    }
    let string = |p: &mut usize| -> Result<String, String> {
        let rest = blob.get(*p..).ok_or("mapping truncated")?;
        let n = rest.iter().position(|&b| b == 0).ok_or("unterminated name in the mapping")?;
        *p += n + 1;
        Ok(crate::names::escape(&rest[..n]))
    };
    let file = if flags & SOURCE_SAME_FILE != 0 { ".".to_string() } else { string(&mut p)? };
    let dset = string(&mut p)?;
    Ok(format!("mapping {count} source dataset(s), the first `{dset}` in file `{file}` (`.` = its own file)"))
}

/// The data of object `index` of the global heap collection at `addr`.
fn heap_object(r: &Reader<'_>, addr: u64, index: u64) -> Result<Vec<u8>, String> {
    let head = r.read(addr, 8 + r.ss as u64, "global heap collection")?;
    if !head.starts_with(b"GCOL") || head[4] != 1 {
        return Err(format!("no global heap collection at address {addr}"));
    }
    let size = le(&head, 8, r.ss).ok_or("global heap collection truncated")?;
    let col = r.read(addr, size, "global heap collection")?;
    let mut p = 8 + r.ss;
    while p + 8 + r.ss <= col.len() {
        let idx = le(&col, p, 2).unwrap_or(0);
        let n = le(&col, p + 8, r.ss).unwrap_or(0);
        if idx == 0 {
            break; // free space: the rest of the collection
        }
        let start = p + 8 + r.ss;
        let data = usize::try_from(n).ok().and_then(|n| col.get(start..start.checked_add(n)?)).ok_or("global heap object runs past its collection")?;
        if idx == index {
            return Ok(data.to_vec());
        }
        p = start + data.len().div_ceil(8) * 8;
    }
    Err(format!("no object {index} in the global heap collection at address {addr}"))
}

/// [`super::external::refusal`] of the virtual dataset `name` in the file `file` whose
/// mapping `Peek::virtual_mapping` described.
pub fn refusal(file: &str, name: &str, mapping: &str) -> crate::error::Error {
    super::external::refusal(
        &format!("`{name}` in `{file}`"),
        &format!("it is a virtual dataset {mapping} (H5D_VIRTUAL; read from its layout message by vh5, libhdf5 did not open it)"),
    )
}

#[cfg(test)]
mod pipeline_tests {
    use super::pipeline_damage;

    /// A version-1 pipeline message of fletcher32 (no client data) + nbit (8 values), as
    /// h5py writes it.
    fn v1() -> Vec<u8> {
        let mut m = vec![1, 2, 0, 0, 0, 0, 0, 0];
        m.extend_from_slice(&[3, 0, 16, 0, 0, 0, 0, 0]);
        m.extend_from_slice(b"fletcher32\0\0\0\0\0\0");
        m.extend_from_slice(&[5, 0, 8, 0, 1, 0, 8, 0]);
        m.extend_from_slice(b"nbit\0\0\0\0");
        m.extend((0..8u32).flat_map(|v| v.to_le_bytes()));
        m
    }

    #[test]
    fn whole_messages_pass() {
        assert_eq!(pipeline_damage(&v1()), None);
        // version 2: no name for ids < 256, no padding; deflate (1 value) + a named plugin
        let mut m = vec![2, 2, 1, 0, 1, 0, 1, 0, 4, 0, 0, 0];
        m.extend_from_slice(&[0x80, 0x7d, 4, 0, 0, 0, 0, 0]);
        m.extend_from_slice(b"lzf\0");
        assert_eq!(pipeline_damage(&m), None);
        // versions vh5 does not read: no verdict
        assert_eq!(pipeline_damage(&[3, 1]), None);
    }

    #[test]
    fn damaged_messages_are_named() {
        // seed 43: the high byte of fletcher32's name length flipped (0x10 -> 0x7a10)
        let mut m = v1();
        m[11] = 0x7a;
        assert!(pipeline_damage(&m).unwrap().contains("name (31248 bytes) runs past the end"), "{:?}", pipeline_damage(&m));
        let mut m = v1();
        m[10] = 17;
        assert!(pipeline_damage(&m).unwrap().contains("not a multiple of 8"));
        let mut m = v1();
        m[38] = 200; // nbit's client data count
        assert!(pipeline_damage(&m).unwrap().contains("client data (200 values)"));
        let mut m = v1();
        m[1] = 3; // one filter more than the message holds
        assert!(pipeline_damage(&m).unwrap().contains("filter 2's id runs past"));
        let mut m = v1();
        m[1] = 33;
        assert!(pipeline_damage(&m).unwrap().contains("33 filters"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hdf5::chunk_btree::tests::with_file;

    /// A global heap collection at address 0 holding `objects` (index, data), 8-byte sizes.
    fn collection(objects: &[(u16, &[u8])]) -> Vec<u8> {
        let mut body = Vec::new();
        for (idx, data) in objects {
            body.extend_from_slice(&idx.to_le_bytes());
            body.extend_from_slice(&[1, 0, 0, 0, 0, 0]);
            body.extend_from_slice(&(data.len() as u64).to_le_bytes());
            body.extend_from_slice(data);
            body.resize(body.len().div_ceil(8) * 8, 0);
        }
        let mut c = b"GCOL\x01\0\0\0".to_vec();
        c.extend_from_slice(&((16 + body.len()) as u64).to_le_bytes());
        c.extend(body);
        c
    }

    fn layout(heap: u64, index: u32) -> Vec<u8> {
        let mut m = vec![4, CLASS_VIRTUAL];
        m.extend_from_slice(&heap.to_le_bytes());
        m.extend_from_slice(&index.to_le_bytes());
        m
    }

    #[test]
    fn virtual_mapping_names_the_first_source_in_both_encodings() {
        let mut v0 = vec![0u8];
        v0.extend_from_slice(&2u64.to_le_bytes());
        v0.extend_from_slice(b"src.h5\0/a\0");
        let mut v1 = vec![1u8];
        v1.extend_from_slice(&1u64.to_le_bytes());
        v1.extend_from_slice(&[SOURCE_SAME_FILE]);
        v1.extend_from_slice(b"/b\0");
        with_file(&collection(&[(1, &v0), (2, &v1)]), |r| {
            assert_eq!(describe(r, &layout(0, 1)).unwrap(), "mapping 2 source dataset(s), the first `/a` in file `src.h5` (`.` = its own file)");
            assert_eq!(describe(r, &layout(0, 2)).unwrap(), "mapping 1 source dataset(s), the first `/b` in file `.` (`.` = its own file)");
        });
    }

    #[test]
    fn virtual_mapping_damage_is_an_error_not_a_read_past_the_end() {
        let mut v0 = vec![0u8];
        v0.extend_from_slice(&1u64.to_le_bytes());
        v0.extend_from_slice(b"src.h5"); // unterminated
        with_file(&collection(&[(1, &v0)]), |r| {
            assert!(describe(r, &layout(0, 1)).unwrap_err().contains("unterminated"));
            assert!(describe(r, &layout(0, 7)).unwrap_err().contains("no object 7"));
            assert!(describe(r, &layout(1 << 40, 1)).unwrap_err().contains("outside the file"));
            assert!(describe(r, &layout(0, 1)[..5]).unwrap_err().contains("truncated"));
        });
        let mut c = collection(&[(1, b"\0")]);
        c[16 + 8..16 + 16].copy_from_slice(&u64::MAX.to_le_bytes()); // object size past the collection
        with_file(&c, |r| assert!(describe(r, &layout(0, 1)).unwrap_err().contains("runs past")));
    }
}
