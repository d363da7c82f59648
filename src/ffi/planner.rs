//! C ABI: the read strategy (planner mode) of `vh5_read_many_slices`, process-wide.

use super::{guard, vh5_status};
use crate::error::{Error, ErrorKind};

use crate::transfer::options::{self, PlannerMode};

/// `vh5_set_planner`: back to the default (env `VH5_PLANNER`, else `VH5_PLANNER_AUTO`).
pub const VH5_PLANNER_DEFAULT: u32 = 0;
/// Per call and per chunk, whichever vh5's cost model predicts faster (the default).
pub const VH5_PLANNER_AUTO: u32 = 1;
/// Every chunk a call touches is read whole once and all row pieces are copied out of it.
pub const VH5_PLANNER_CHUNKS: u32 = 2;
/// One `H5Dread` per row (libhdf5's own chunk cache does the rest), except for datasets whose
/// filters vh5 decodes itself, which are read as under `VH5_PLANNER_CHUNKS`.
pub const VH5_PLANNER_ROWS: u32 = 3;
const _: () = assert!(VH5_PLANNER_AUTO == 1 && VH5_PLANNER_CHUNKS == 2 && VH5_PLANNER_ROWS == 3);

/// Set the read strategy of every later `vh5_read_many_slices` call, process-wide:
/// `VH5_PLANNER_AUTO`, `VH5_PLANNER_CHUNKS`, `VH5_PLANNER_ROWS`, or `VH5_PLANNER_DEFAULT` (0)
/// = back to the default, which is env `VH5_PLANNER` (`auto`, `chunks` or `rows`; read once)
/// when set, else `VH5_PLANNER_AUTO`. Results are identical in every mode; only speed and
/// memory differ (the modes: docs/ARCHITECTURE.md). Meant for benchmarks and for working
/// around a poor choice of `auto`; calls already running keep the mode they started with.
///
/// Returns `VH5_OK`; `VH5_ERR_INVALID_ARGUMENT` for any other `mode` (the setting is then
/// unchanged). Thread-safe.
#[no_mangle]
pub extern "C" fn vh5_set_planner(mode: u32) -> vh5_status {
    guard(|| {
        if mode == VH5_PLANNER_DEFAULT {
            options::set_planner(None);
            return Ok(());
        }
        match PlannerMode::from_code(mode) {
            Some(m) => {
                options::set_planner(Some(m));
                Ok(())
            }
            None => Err(Error::new(
                ErrorKind::InvalidArgument,
                format!("mode = {mode}: not one of VH5_PLANNER_DEFAULT (0), VH5_PLANNER_AUTO (1), VH5_PLANNER_CHUNKS (2), VH5_PLANNER_ROWS (3)"),
            )),
        }
    })
}

/// The read strategy a `vh5_read_many_slices` call starting now uses: `VH5_PLANNER_AUTO`,
/// `VH5_PLANNER_CHUNKS` or `VH5_PLANNER_ROWS` (never 0): the mode set with
/// `vh5_set_planner`, else env `VH5_PLANNER`, else `VH5_PLANNER_AUTO` (also when
/// `VH5_PLANNER` is invalid, which makes reads fail with `VH5_ERR_INVALID_ARGUMENT`).
/// Thread-safe.
#[no_mangle]
pub extern "C" fn vh5_get_planner() -> u32 {
    // Counted in flight: the first call reads the environment into a `OnceLock`, which a
    // fork must not copy half-filled.
    let _in_flight = super::fork::enter();
    options::planner_mode().code()
}
