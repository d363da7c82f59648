//! Names shared by `vh5 payload` for one array ([`super::payload_cmd`]) and for documents
//! ([`super::payload_doc`]): payload formats, Reductionist layouts, byte orders.

use serde_json::{json, Value};
use vh5::dtype::ByteOrder;
use vh5::payload::{Format, Layout};

/// `"reductionist"`, `"typed_array"`, `"multidim"`, `"msgpack_numpy"`.
pub fn format_name(f: Format) -> &'static str {
    match f {
        Format::Reductionist => "reductionist",
        Format::TypedArray => "typed_array",
        Format::Multidim => "multidim",
        Format::MsgpackNumpy => "msgpack_numpy",
    }
}

/// The Reductionist response layout (`"0.12"`, `"0.13.0"`, `"0.13.1"`, `"client"`), `None`
/// for other formats.
pub fn layout_name(l: Layout) -> Option<&'static str> {
    match l {
        Layout::None => None,
        Layout::Reductionist0_12 => Some("0.12"),
        Layout::Reductionist0_13_0 => Some("0.13.0"),
        Layout::Reductionist0_13_1 => Some("0.13.1"),
        Layout::Client => Some("client"),
    }
}

/// `"little"`, `"big"`, or JSON null (1-byte elements have no byte order).
pub fn order_name(o: Option<ByteOrder>) -> Value {
    match o {
        Some(ByteOrder::Little) => json!("little"),
        Some(ByteOrder::Big) => json!("big"),
        None => Value::Null,
    }
}
