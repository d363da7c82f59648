/* C99 test of the HDF5 half of the vh5 ABI: open / info / read_many_slices / close through
 * include/vh5.h only, on the real netCDF-4 file ../shared/data/real/test1.nc (values checked
 * against h5py 3.16), plus every error path with its status and message. Skips (exit 0 with a
 * message) when the shared data directory is absent. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "vh5.h"


static char msg[4096];
static const char *last(void) {
    vh5_last_error_message(msg, sizeof msg);
    return msg;
}

int main(void) {
    const char *dir = getenv("VH5_SHARED_DATA");
    char path[1024], emac[1024], missing[1024];
    if (!dir) dir = "../shared/data";
    snprintf(path, sizeof path, "%s/real/test1.nc", dir);
    snprintf(emac, sizeof emac, "%s/real/emac.nc", dir);
    snprintf(missing, sizeof missing, "%s/real/no_such_file.nc", dir);
    FILE *probe = fopen(path, "rb");
    if (!probe) {
        printf("SKIP test_hdf5: %s not found (set VH5_SHARED_DATA)\n", path);
        return 0;
    }
    fclose(probe);

    int64_t f = -1, d = -1, x = 0;
    vh5_status st = vh5_file_open(path, 0, &f);
    CHECKF(st == VH5_OK, "open: %s", last());
    st = vh5_dataset_open(f, "/tas", &d);
    CHECKF(st == VH5_OK, "dataset: %s", last());

    vh5_dataset_info info;
    st = vh5_dataset_get_info(d, &info);
    CHECKF(st == VH5_OK, "info: %s", last());
    CHECKF(info.ndim == 3 && info.shape[0] == 12 && info.shape[1] == 64 && info.shape[2] == 128, "shape");
    CHECKF(info.chunked == 1 && info.chunk[0] == 6 && info.chunk[1] == 32 && info.chunk[2] == 32, "chunks");
    CHECKF(info.dtype == VH5_DTYPE_FLOAT64 && info.itemsize == 8 && info.byte_order == VH5_ORDER_LITTLE, "dtype");
    CHECKF(info.nfilters == 2 && info.filter_id[0] == 2 && info.filter_id[1] == 1, "filters shuffle+deflate");
    CHECKF(info.has_fill_value == 1 && info.fill_value_user_defined == 1, "fill value");
    CHECKF(info.extent_may_change == 0, "a read-only file: the extent is fixed while open");
    {
        /* vh5_dataset_get_shape: the extent alone (what a caller re-reads when it may change). */
        uint64_t dims[32];
        uint32_t nd = 99;
        CHECKF(vh5_dataset_get_shape(d, &nd, dims) == VH5_OK && nd == 3 && dims[0] == 12 && dims[1] == 64 && dims[2] == 128,
               "get_shape: %s", last());
        CHECKF(vh5_dataset_get_shape(d, &nd, NULL) == VH5_ERR_NULL_ARGUMENT && nd == 0, "get_shape NULL shape");
        CHECKF(vh5_dataset_get_shape(d, NULL, dims) == VH5_ERR_NULL_ARGUMENT, "get_shape NULL ndim");
        CHECKF(vh5_dataset_get_shape(f, &nd, dims) == VH5_ERR_INVALID_HANDLE, "get_shape of a file id");
    }

    /* Row 0: tas[0:12:5, 10, 20:30:4] into dst[0:3, 0, 0:3] of a (3, 1, 3) C-order array.
       Row 1: tas[11, 63, 127] into the last element, overwriting row 0's value there. */
    double out[9];
    uint64_t shape[3] = {3, 1, 3};
    vh5_array a = {out, sizeof out, 0, VH5_DTYPE_FLOAT64, 8, 3, shape, NULL};
    uint64_t src_start[6] = {0, 10, 20, 11, 63, 127};
    uint64_t dst_start[6] = {0, 0, 0, 2, 0, 2};
    uint64_t count[6] = {3, 1, 3, 1, 1, 1};
    uint64_t src_step[6] = {5, 1, 4, 1, 1, 1};
    const double want[9] = {276.3569641113281, 275.7984619140625, 273.9180603027344, 279.783935546875, 278.8504638671875,
                            277.31146240234375, 273.4346923828125, 274.2020568847656, 256.9337158203125};
    memset(out, 0, sizeof out);
    st = vh5_read_many_slices(d, &a, 2, src_start, dst_start, count, src_step, NULL, 0);
    CHECKF(st == VH5_OK, "read: %s", last());
    for (int i = 0; i < 9; i++) CHECKF(out[i] == want[i], "element %d: %.17g != %.17g", i, out[i], want[i]);

    /* Reversed last axis via a negative stride and offset. */
    int64_t strides[3] = {24, 24, -8};
    vh5_array rev = {out, sizeof out, 16, VH5_DTYPE_FLOAT64, 8, 3, shape, strides};
    st = vh5_read_many_slices(d, &rev, 1, src_start, dst_start, count, src_step, NULL, 0);
    CHECKF(st == VH5_OK, "reversed read: %s", last());
    CHECKF(out[0] == want[2] && out[2] == want[0] && out[8] == want[6], "reversed values");

    /* Errors, each with its own status and a message naming the culprit. */
    uint64_t bad_start[6] = {0, 10, 20, 11, 63, 128};
    st = vh5_read_many_slices(d, &a, 2, bad_start, dst_start, count, src_step, NULL, 0);
    CHECKF(st == VH5_ERR_OUT_OF_BOUNDS && strstr(last(), "row 1 axis 2"), "oob: %d %s", st, msg);
    st = vh5_read_many_slices(d, &a, 2, bad_start, dst_start, count, src_step, NULL, VH5_SLICES_CLIP);
    CHECKF(st == VH5_OK, "clip: %s", last());
    uint64_t zero_step[6] = {1, 1, 0, 1, 1, 1};
    st = vh5_read_many_slices(d, &a, 2, src_start, dst_start, count, zero_step, NULL, 0);
    CHECKF(st == VH5_ERR_INVALID_ARGUMENT && strstr(last(), "row 0 axis 2: src_step is 0"), "step 0: %s", msg);
    vh5_array f32 = a;
    f32.dtype = VH5_DTYPE_FLOAT32;
    f32.itemsize = 4;
    st = vh5_read_many_slices(d, &f32, 2, src_start, dst_start, count, src_step, NULL, 0);
    CHECKF(st == VH5_ERR_DTYPE && strstr(last(), "dtype mismatch"), "dtype: %s", msg);
    st = vh5_read_many_slices(d, &f32, 2, src_start, dst_start, count, src_step, NULL, VH5_SLICES_CONVERT);
    CHECKF(st == VH5_OK && ((float *)out)[0] == (float)want[0], "convert: %s", last());
    vh5_array small = a;
    small.base_len = 64;
    st = vh5_read_many_slices(d, &small, 2, src_start, dst_start, count, src_step, NULL, 0);
    CHECKF(st == VH5_ERR_BUFFER_TOO_SMALL, "small buffer: %d", st);
    st = vh5_read_many_slices(d, &a, 2, src_start, dst_start, count, src_step, NULL, 0x80);
    CHECKF(st == VH5_ERR_INVALID_ARGUMENT, "flags: %d", st);
    st = vh5_read_many_slices(d, NULL, 2, src_start, dst_start, count, NULL, NULL, 0);
    CHECKF(st == VH5_ERR_NULL_ARGUMENT, "null dst: %d", st);

    /* Scalar dataset: ndim 0, no table columns. */
    int64_t h = -1;
    double height = 0;
    CHECKF(vh5_dataset_open(f, "height", &h) == VH5_OK, "height: %s", last());
    vh5_array sc = {&height, sizeof height, 0, VH5_DTYPE_FLOAT64, 8, 0, NULL, NULL};
    st = vh5_read_many_slices(h, &sc, 1, NULL, NULL, NULL, NULL, NULL, 0);
    CHECKF(st == VH5_OK && height == 2.0, "height: %s", last());
    CHECKF(vh5_close(h) == VH5_OK, "close height");

    /* Big-endian dimension scale. */
    int64_t b = -1;
    CHECKF(vh5_dataset_open(f, "bounds", &b) == VH5_OK, "bounds: %s", last());
    CHECKF(vh5_dataset_get_info(b, &info) == VH5_OK && info.byte_order == VH5_ORDER_BIG && info.dtype == VH5_DTYPE_FLOAT32, "bounds is >f4");
    CHECKF(vh5_close(b) == VH5_OK, "close bounds");

    st = vh5_dataset_open(f, "no_such_var", &x);
    CHECKF(st == VH5_ERR_NOT_FOUND && strstr(last(), "no_such_var") && x == -1, "missing dataset: %s", msg);
    st = vh5_file_open(missing, 0, &x);
    CHECKF(st == VH5_ERR_IO && strstr(last(), "no_such_file.nc"), "missing file: %s", msg);
    st = vh5_file_open(emac, 0, &x);
    CHECKF(st == VH5_ERR_IO && strstr(last(), "not an HDF5 file"), "emac: %s", msg);
    st = vh5_file_open(path, 4, &x);
    CHECKF(st == VH5_ERR_INVALID_ARGUMENT, "open flags: %d", st);

    CHECKF(vh5_close(d) == VH5_OK, "close dataset");
    CHECKF(vh5_close(f) == VH5_OK, "close file");
    st = vh5_close(d);
    CHECKF(st == VH5_ERR_INVALID_HANDLE, "double close: %d", st);
    st = vh5_read_many_slices(d, &a, 2, src_start, dst_start, count, src_step, NULL, 0);
    CHECKF(st == VH5_ERR_INVALID_HANDLE, "closed handle: %s", last());
    st = vh5_dataset_get_info(d, &info);
    CHECKF(st == VH5_ERR_INVALID_HANDLE && info.ndim == 0, "info on closed: %d", st);

    return finish("test_hdf5");
}
