/* C99 test of vh5_dataset_from_hdf5_id: a C program's own dataset id (H5Dopen2 of the libhdf5
 * libvh5 calls, looked up with dlsym so this program needs no -lhdf5) used as a vh5 dataset:
 * vh5 takes its own reference (vh5_close leaves the caller's id open, and the other way
 * round), reads equal what was written, and ids of other kinds or closed ids are refused with
 * VH5_ERR_INVALID_HANDLE. Skipped for a static build that exports no HDF5 symbols. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "hdf5_dlsym.h"
#include "vh5.h"

int main(void) {
    uint32_t major = 0;
    vh5_hdf5_version(&major, NULL, NULL, NULL); /* loads and initialises libhdf5 */
    if (!hdf5_dlsym_load()) {
        printf("SKIP test_from_hdf5_id: libhdf5 symbols not visible (static build)\n");
        return 0;
    }
    h5.open();
    const char *tmp = getenv("VH5_TEST_TMP");
    char path[4096];
    snprintf(path, sizeof path, "%s/from_hdf5_id.h5", tmp ? tmp : "/tmp");

    /* write a 4x5 dataset through libhdf5 directly */
    double data[20];
    for (int i = 0; i < 20; i++) data[i] = i * 1.5;
    hsize dims[2] = {4, 5};
    hid f = h5.fcreate(path, 2u /* H5F_ACC_TRUNC */, 0, 0);
    CHECKF(f >= 0, "H5Fcreate %s", path);
    hid s = h5.screate_simple(2, dims, NULL);
    hid d = h5.dcreate2(f, "x", *h5.native_double, s, 0, 0, 0);
    CHECKF(d >= 0 && h5.dwrite(d, *h5.native_double, 0, 0, 0, data) >= 0, "write");
    h5.sclose(s);

    /* the caller's id, open for writing, used by vh5 */
    int64_t v = -7;
    vh5_status st = vh5_dataset_from_hdf5_id(d, &v);
    CHECKF(st == VH5_OK && v == d, "vh5_dataset_from_hdf5_id: %s (%lld)", vh5_status_name(st), (long long)v);
    double out[6] = {0};
    uint64_t shape[2] = {2, 3};
    vh5_array dst;
    memset(&dst, 0, sizeof dst);
    dst.base = out;
    dst.base_len = sizeof out;
    dst.dtype = VH5_DTYPE_FLOAT64;
    dst.itemsize = 8;
    dst.ndim = 2;
    dst.shape = shape;
    uint64_t src_start[2] = {1, 2}, dst_start[2] = {0, 0}, count[2] = {2, 3};
    st = vh5_read_many_slices(v, &dst, 1, src_start, dst_start, count, NULL, NULL, 0);
    CHECKF(st == VH5_OK, "read: %s", vh5_status_name(st));
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++) CHECKF(out[i * 3 + j] == data[(1 + i) * 5 + 2 + j], "out[%d][%d] = %g", i, j, out[i * 3 + j]);

    /* vh5_close gives back vh5's reference only */
    CHECKF(vh5_close(v) == VH5_OK, "vh5_close");
    CHECKF(h5.iis_valid(d) > 0, "the caller's id was closed by vh5_close");
    /* the caller closing first leaves vh5's reference valid */
    st = vh5_dataset_from_hdf5_id(d, &v);
    CHECKF(st == VH5_OK, "second adoption: %s", vh5_status_name(st));
    CHECKF(h5.dclose(d) >= 0, "H5Dclose");
    vh5_dataset_info info;
    st = vh5_dataset_get_info(v, &info);
    CHECKF(st == VH5_OK && info.ndim == 2 && info.shape[0] == 4 && info.shape[1] == 5, "info after the caller's close: %s", vh5_status_name(st));
    CHECKF(vh5_close(v) == VH5_OK, "vh5_close");

    /* refused: a file id (naming its type), a closed id, NULL out */
    st = vh5_dataset_from_hdf5_id(f, &v);
    const char *msg = last_msg();
    CHECKF(st == VH5_ERR_INVALID_HANDLE && v == -1 && strstr(msg, "not of a dataset"), "file id: %s %s", vh5_status_name(st), msg);
    st = vh5_dataset_from_hdf5_id(d, &v);
    CHECKF(st == VH5_ERR_INVALID_HANDLE && v == -1, "closed id: %s", vh5_status_name(st));
    CHECKF(vh5_dataset_from_hdf5_id(f, NULL) == VH5_ERR_NULL_ARGUMENT, "NULL out");
    h5.fclose(f);
    remove(path);

    return finish("test_from_hdf5_id");
}
