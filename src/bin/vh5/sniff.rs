//! What an input that is not an array payload is, for `vh5 payload`'s error message: an
//! HDF5 or netCDF-3 file (recognised by the library: [`other_file_kind`]), JSON. (Empty
//! input keeps the decoder's `VH5_ERR_MALFORMED` message.)

use vh5::payload::detect::other_file_kind;

/// A description of `buf` when it is a known kind of file that is not a payload, `None`
/// otherwise (then the decoder's own message says what is wrong).
pub fn not_a_payload(buf: &[u8]) -> Option<String> {
    if let Some(kind) = other_file_kind(buf) {
        let advice = if kind.starts_with("an HDF5") { "list its datasets with `vh5 info FILE`" } else { "netCDF-3 is not HDF5 either: read it with the netCDF library" };
        return Some(format!("{kind}, not an array payload; {advice}"));
    }
    let first = buf.iter().find(|b| !b.is_ascii_whitespace()).copied();
    if matches!(first, Some(b'{' | b'[' | b'"')) && serde_json::from_slice::<serde_json::Value>(buf).is_ok() {
        return Some(format!("a JSON document ({} bytes), not an array payload (a Reductionist error body would be reported as VH5_ERR_SERVER_ERROR)", buf.len()));
    }
    None
}

/// The first up to 8 bytes of `buf` in hex, for messages about unknown inputs.
pub fn first_bytes(buf: &[u8]) -> String {
    let hex: Vec<String> = buf.iter().take(8).map(|b| format!("{b:02x}")).collect();
    format!("first bytes {}", hex.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    use vh5::payload::detect::HDF5_SIGNATURE;

    #[test]
    fn recognises_hdf5_netcdf3_and_json() {
        let mut h = HDF5_SIGNATURE.to_vec();
        h.resize(4096, 0);
        assert!(not_a_payload(&h).unwrap().contains("HDF5 file (signature at byte 0)"));
        let mut u = vec![0u8; 1024];
        u.extend_from_slice(HDF5_SIGNATURE);
        assert!(not_a_payload(&u).unwrap().contains("user block of 1024 bytes"));
        let mut odd = vec![0u8; 700];
        odd.extend_from_slice(HDF5_SIGNATURE); // not at a user-block offset
        assert_eq!(not_a_payload(&odd), None);
        assert!(not_a_payload(b"CDF\x01\0\0\0\0").unwrap().contains("netCDF-3 file (classic"));
        assert!(not_a_payload(b"CDF\x02\0\0").unwrap().contains("64-bit offset"));
        assert!(not_a_payload(b"CDF\x05\0\0").unwrap().contains("CDF-5"));
        assert_eq!(not_a_payload(b"CDF\x03\0\0"), None);
        assert!(not_a_payload(b" {\"a\": [1, 2]}\n").unwrap().contains("JSON document"));
        assert_eq!(not_a_payload(b"{not json"), None);
        assert_eq!(not_a_payload(b""), None);
        assert_eq!(first_bytes(b"\x01\x02"), "first bytes 01 02");
    }
}
