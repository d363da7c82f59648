//! The oracle of the payload_document fuzz target (also replayed on stable Rust over the
//! committed seeds by tests/payload_document.rs): every invariant of
//! `payload::decode_document` and of the C ABI `payload_decode_document`.

use vh5::ffi::document::{payload_decode_document, payload_item, PAYLOAD_NO_PARENT};
use vh5::ffi::payload::payload_view;
use vh5::ffi::vh5_status;
use vh5::payload::document::{decode_document, DocFormat, ItemKind, FLAG_INDEFINITE, NO_PARENT};

/// Input layout: byte 0 picks the format (0 auto, 1 CBOR, 2 msgpack: value % 3), the rest is
/// the document.
pub fn check_document(data: &[u8]) {
    let Some((&f, buf)) = data.split_first() else { return };
    let (fmt, code) = match f % 3 {
        0 => (DocFormat::Auto, 0u32),
        1 => (DocFormat::Cbor, 1),
        _ => (DocFormat::Msgpack, 2),
    };
    let r = decode_document(buf, fmt);
    // deterministic
    assert_eq!(format!("{r:?}"), format!("{:?}", decode_document(buf, fmt)));
    let c = ffi(buf, code, usize::MAX, usize::MAX);
    let d = match r {
        Err(e) => {
            assert_eq!(c.0, vh5_status::from(e.kind), "C ABI status differs: {}", e.message);
            assert_eq!((c.1, c.2), (0, 0));
            return;
        }
        Ok(d) => d,
    };
    let n = d.items.len();
    assert!(n >= 1 && n <= buf.len(), "{n} items for {} bytes", buf.len());
    let mut kids = vec![0u64; n];
    let mut used = vec![false; d.views.len()];
    for (i, it) in d.items.iter().enumerate() {
        if i == 0 {
            assert_eq!((it.parent, it.position), (NO_PARENT, 0));
        } else {
            let p = it.parent as usize;
            assert!(p < i, "item {i}: parent {p}");
            assert_eq!(it.position, kids[p], "item {i}: position");
            kids[p] += 1;
        }
        assert!(it.offset < buf.len());
        match it.kind {
            ItemKind::Text | ItemKind::Bytes | ItemKind::Ext if it.flags & FLAG_INDEFINITE == 0 => {
                let s = &buf[it.data_offset..it.data_offset + it.data_len];
                if it.kind == ItemKind::Text {
                    assert!(std::str::from_utf8(s).is_ok(), "item {i}: text not UTF-8");
                }
            }
            ItemKind::ArrayView => {
                let v = &d.views[it.value as usize];
                assert!(!std::mem::replace(&mut used[it.value as usize], true), "view {} used twice", it.value);
                assert_eq!((v.data_offset, v.data.len()), (it.data_offset, it.data_len));
                assert_eq!(v.data.as_ptr(), buf[v.data_offset..].as_ptr());
                assert_eq!(v.data.len() as u64, v.nelements * v.itemsize() as u64);
                assert_eq!(v.shape.nelements(), Some(v.nelements));
                assert_eq!(it.children, 0);
            }
            _ => {}
        }
    }
    assert!(used.iter().all(|&u| u), "a view no item refers to");
    for (i, it) in d.items.iter().enumerate() {
        assert_eq!(it.children, kids[i], "item {i}: children");
    }
    if n == 1 && d.items[0].kind == ItemKind::ArrayView && fmt == DocFormat::Auto {
        // a document that is one array is what decode_view gives for it
        assert_eq!(vh5::payload::decode_view(buf, 0).as_ref(), Ok(&d.views[0]));
    }
    // The C ABI: the same items with exact capacities; one short is BUFFER_TOO_SMALL with
    // the needed counts and nothing written past the capacity.
    let (st, ni, nv, items, views) = c;
    assert_eq!((st, ni, nv), (vh5_status::VH5_OK, n, d.views.len()));
    for (a, b) in items.iter().zip(&d.items) {
        assert_eq!(*a, payload_item::from(*b));
        assert!(a.parent == PAYLOAD_NO_PARENT || a.parent < n as u64);
    }
    for (a, b) in views.iter().zip(&d.views) {
        assert_eq!(a.data, b.data.as_ptr());
    }
    let (st, ni2, nv2, _, _) = ffi(buf, code, n - 1, d.views.len());
    assert_eq!((st, ni2, nv2), (vh5_status::VH5_ERR_BUFFER_TOO_SMALL, n, d.views.len()));
    if !d.views.is_empty() {
        let (st, ni2, nv2, _, _) = ffi(buf, code, n, d.views.len() - 1);
        assert_eq!((st, ni2, nv2), (vh5_status::VH5_ERR_BUFFER_TOO_SMALL, n, d.views.len()));
    }
}

/// Call the C ABI with capacities `ic` / `vc` (usize::MAX: exact, from a first call), with
/// guard elements after each output checked untouched.
#[allow(clippy::type_complexity)]
fn ffi(buf: &[u8], code: u32, ic: usize, vc: usize) -> (vh5_status, usize, usize, Vec<payload_item>, Vec<payload_view>) {
    let (mut ni, mut nv) = (0usize, 0usize);
    let (ic, vc) = if ic == usize::MAX {
        let st = unsafe { payload_decode_document(buf.as_ptr(), buf.len(), code, std::ptr::null_mut(), 0, std::ptr::null_mut(), 0, &mut ni, &mut nv) };
        if st != vh5_status::VH5_ERR_BUFFER_TOO_SMALL {
            return (st, ni, nv, vec![], vec![]);
        }
        (ni, nv)
    } else {
        (ic, vc)
    };
    let guard = payload_item { kind: 0xdead, ..Default::default() };
    let mut items = vec![guard; ic + 1];
    let mut views: Vec<payload_view> = (0..vc + 1).map(|_| unsafe { std::mem::zeroed() }).collect();
    views[vc].reserved = 0xab;
    let st = unsafe { payload_decode_document(buf.as_ptr(), buf.len(), code, items.as_mut_ptr(), ic, views.as_mut_ptr(), vc, &mut ni, &mut nv) };
    assert_eq!(items[ic], guard, "item written past the capacity");
    assert_eq!(views[vc].reserved, 0xab, "view written past the capacity");
    items.truncate(ic);
    views.truncate(vc);
    (st, ni, nv, items, views)
}
