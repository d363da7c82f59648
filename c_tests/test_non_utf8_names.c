/* C99 test of link names that are not UTF-8 through the C ABI: a file written with libhdf5
 * itself (looked up with dlsym: hdf5_dlsym.h; no -lhdf5) holds Latin-1 names
 * ("temp\xe9rature" and "temp\xe8rature", a group "gr\xfcn" and a soft link "soft\xb0" to a
 * Latin-1 target) in a file whose path is not UTF-8 either. vh5_group_members lists the bytes
 * exactly (no replacement character, the two names stay two), vh5_dataset_open and
 * vh5_file_open take them back, and a missing one is named escaped (`\xe7`) in the message.
 * Skipped for a static build that exports no HDF5 symbols. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "hdf5_dlsym.h"
#include "vh5.h"

static int write_ds(hid loc, const char *name, double v) {
    hsize n = 1;
    hid s = h5.screate_simple(1, &n, NULL);
    hid d = h5.dcreate2(loc, name, *h5.native_double, s, 0, 0, 0);
    int ok = d >= 0 && h5.dwrite(d, *h5.native_double, 0, 0, 0, &v) >= 0;
    h5.dclose(d);
    h5.sclose(s);
    return ok;
}

static double read_one(int64_t f, const char *name) {
    int64_t d = -1;
    double out = -1;
    vh5_status st = vh5_dataset_open(f, name, &d);
    CHECKF(st == VH5_OK, "open %s: %s", name, last_msg());
    if (st != VH5_OK) return -1;
    uint64_t shape[1] = {1}, zero[1] = {0}, one[1] = {1};
    vh5_array a;
    memset(&a, 0, sizeof a);
    a.base = &out;
    a.base_len = sizeof out;
    a.dtype = VH5_DTYPE_FLOAT64;
    a.itemsize = 8;
    a.ndim = 1;
    a.shape = shape;
    st = vh5_read_many_slices(d, &a, 1, zero, zero, one, NULL, NULL, 0);
    CHECKF(st == VH5_OK, "read %s: %s", name, last_msg());
    vh5_close(d);
    return out;
}

int main(void) {
    uint32_t major = 0;
    vh5_hdf5_version(&major, NULL, NULL, NULL); /* loads and initialises libhdf5 */
    if (!hdf5_dlsym_load()) {
        printf("SKIP test_non_utf8_names: libhdf5 symbols not visible (static build)\n");
        return 0;
    }
    h5.open();
    const char *tmp = getenv("VH5_TEST_TMP");
    char path[4096];
    snprintf(path, sizeof path, "%s/names_\xe9t\xe9.h5", tmp ? tmp : "/tmp"); /* a Latin-1 file name */

    hid f = h5.fcreate(path, 2u /* H5F_ACC_TRUNC */, 0, 0);
    CHECKF(f >= 0, "H5Fcreate %s", path);
    CHECK(write_ds(f, "temp\xe9rature", 1.0));
    CHECK(write_ds(f, "temp\xe8rature", 2.0));
    hid g = h5.gcreate2(f, "gr\xfcn", 0, 0, 0);
    CHECK(g >= 0 && write_ds(g, "m\xe4", 3.0));
    h5.gclose(g);
    CHECK(h5.lcreate_soft("/gr\xfcn/m\xe4", f, "soft\xb0", 0, 0) >= 0);
    h5.fclose(f);

    int64_t vf = -1;
    vh5_status st = vh5_file_open(path, 0, &vf);
    CHECKF(st == VH5_OK, "vh5_file_open of a Latin-1 path: %s", last_msg());

    /* the root's links: kind byte, name bytes, NUL; name order is byte order */
    const char want[] = "ggr\xfcn\0" "dsoft\xb0\0" "dtemp\xe8rature\0" "dtemp\xe9rature\0";
    size_t need = 0;
    st = vh5_group_members(vf, "/", 0, NULL, 0, &need);
    CHECKF(st == VH5_OK && need == sizeof want - 1, "size query: %s, %zu bytes (want %zu)", vh5_status_name(st), need, sizeof want - 1);
    uint8_t buf[256];
    size_t got = 0;
    st = vh5_group_members(vf, "/", 0, buf, sizeof buf, &got);
    CHECKF(st == VH5_OK && got == sizeof want - 1 && memcmp(buf, want, got) == 0, "root members: %s", last_msg());

    /* recursive, and the members of a group whose own name is Latin-1 */
    const char want_rec[] = "ggr\xfcn\0" "dgr\xfcn/m\xe4\0" "dtemp\xe8rature\0" "dtemp\xe9rature\0";
    st = vh5_group_members(vf, ".", VH5_GROUP_RECURSIVE, buf, sizeof buf, &got);
    CHECKF(st == VH5_OK && got == sizeof want_rec - 1 && memcmp(buf, want_rec, got) == 0, "recursive: %s", last_msg());
    st = vh5_group_members(vf, "/gr\xfcn", 0, buf, sizeof buf, &got);
    CHECKF(st == VH5_OK && got == 4 && memcmp(buf, "dm\xe4", 4) == 0, "group gr\\xfcn: %s", last_msg());

    /* each name opens its own dataset, the soft link its target */
    CHECK(read_one(vf, "temp\xe9rature") == 1.0);
    CHECK(read_one(vf, "/temp\xe8rature") == 2.0);
    CHECK(read_one(vf, "gr\xfcn/m\xe4") == 3.0);
    CHECK(read_one(vf, "soft\xb0") == 3.0);

    /* a missing name is refused naming it escaped, never another object */
    int64_t d = 0;
    st = vh5_dataset_open(vf, "temp\xe7rature", &d);
    const char *m = last_msg();
    CHECKF(st == VH5_ERR_NOT_FOUND && d == -1 && strstr(m, "`temp\\xe7rature`"), "missing: %s %s", vh5_status_name(st), m);
    st = vh5_group_members(vf, "gr\xfc", 0, NULL, 0, &need);
    m = last_msg();
    CHECKF(st == VH5_ERR_NOT_FOUND && strstr(m, "`gr\\xfc`"), "missing group: %s %s", vh5_status_name(st), m);
    vh5_close(vf);
    remove(path);
    return finish("test_non_utf8_names");
}
