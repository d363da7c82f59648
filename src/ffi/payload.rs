//! C ABI of the payload half: `payload_decode_view`, `payload_decode_count`, `payload_copy_data`.
