/* C99 test of vh5_write_many_slices and vh5_copy_many_slices through include/vh5.h only.
 *
 * Writes go to a temporary COPY of the real netCDF-4 file ../shared/data/real/test1.nc
 * (/tas: 12x64x128 float64, chunks 6x32x32, shuffle+deflate): rows written (steps, a
 * Fortran-order source, overlapping rows), read back with vh5_read_many_slices and compared
 * with values computed here; the original opened read-only refuses the write. Memory copies:
 * memmove semantics inside one buffer, clip, and every error status. Skips (exit 0 with a
 * message) when the shared data directory is absent. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "vh5.h"


static char msg[8192];
static const char *last(void) {
    vh5_last_error_message(msg, sizeof msg);
    return msg;
}

static vh5_array arr(void *base, size_t len, uint32_t ndim, const uint64_t *shape, const int64_t *strides) {
    vh5_array a;
    memset(&a, 0, sizeof a);
    a.base = base;
    a.base_len = len;
    a.dtype = VH5_DTYPE_FLOAT64;
    a.itemsize = 8;
    a.ndim = ndim;
    a.shape = shape;
    a.strides = strides;
    return a;
}

static int copy_file(const char *from, const char *to) {
    FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
    char buf[65536];
    size_t n;
    if (!in || !out) return -1;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0) fwrite(buf, 1, n, out);
    fclose(in);
    return fclose(out);
}

static void memory_copies(void) {
    /* memmove rule: a = arange(10); a[2:7] = a[0:5] -> 0 1 0 1 2 3 4 7 8 9 */
    double a[10];
    uint64_t shape[1] = {10};
    uint64_t s[1] = {0}, d[1] = {2}, c[1] = {5};
    int i;
    for (i = 0; i < 10; i++) a[i] = i;
    vh5_array va = arr(a, sizeof a, 1, shape, NULL);
    vh5_status st = vh5_copy_many_slices(&va, &va, 1, s, d, c, NULL, NULL, 0);
    CHECKF(st == VH5_OK, "%s", last());
    {
        const double want[10] = {0, 1, 0, 1, 2, 3, 4, 7, 8, 9};
        CHECKF(memcmp(a, want, sizeof a) == 0, "memmove rule");
    }
    /* 2-D: src (3,4) C order, dst (4,3) Fortran order; two rows, the second overlapping and
       clipped: row 0 copies src[0:2, 1:4:2] to dst[1:3, 0:2]; row 1 src[2, 0:4] -> dst[3, 0:3]
       (count 4 clipped to 3 by the dst extent). */
    double src[12], dst[12];
    uint64_t sshape[2] = {3, 4}, dshape[2] = {4, 3};
    int64_t fstr[2] = {8, 32};
    uint64_t ss[4] = {0, 1, 2, 0}, ds[4] = {1, 0, 3, 0}, cc[4] = {2, 2, 1, 4}, sst[4] = {1, 2, 1, 1}, dst_[4] = {1, 1, 1, 1};
    for (i = 0; i < 12; i++) {
        src[i] = 100 + i;
        dst[i] = -1;
    }
    vh5_array vs = arr(src, sizeof src, 2, sshape, NULL), vd = arr(dst, sizeof dst, 2, dshape, fstr);
    st = vh5_copy_many_slices(&vs, &vd, 2, ss, ds, cc, sst, dst_, 0);
    CHECKF(st == VH5_ERR_OUT_OF_BOUNDS, "strict: %s", last());
    CHECKF(strstr(last(), "row 1 axis 1") != NULL, "%s", msg);
    for (i = 0; i < 12; i++) CHECKF(dst[i] == -1, "nothing written on error (%d)", i);
    st = vh5_copy_many_slices(&vs, &vd, 2, ss, ds, cc, sst, dst_, VH5_SLICES_CLIP);
    CHECKF(st == VH5_OK, "clip: %s", last());
    /* dst[i][j] lives at dst[i + 4*j] (Fortran) */
    CHECKF(dst[1 + 0] == 101 && dst[1 + 4] == 103 && dst[2 + 0] == 105 && dst[2 + 4] == 107, "row 0");
    CHECKF(dst[3 + 0] == 108 && dst[3 + 4] == 109 && dst[3 + 8] == 110, "row 1");
    CHECKF(dst[0] == -1 && dst[1 + 8] == -1, "untouched");
    /* errors */
    vh5_array vf = vd;
    vf.dtype = VH5_DTYPE_INT64;
    CHECKF(vh5_copy_many_slices(&vs, &vf, 2, ss, ds, cc, sst, dst_, VH5_SLICES_CLIP) == VH5_ERR_DTYPE, "dtype");
    CHECKF(vh5_copy_many_slices(&vs, &vd, 2, ss, ds, cc, sst, dst_, VH5_SLICES_CONVERT) == VH5_ERR_INVALID_ARGUMENT, "convert refused");
    CHECKF(vh5_copy_many_slices(NULL, &vd, 2, ss, ds, cc, sst, dst_, 0) == VH5_ERR_NULL_ARGUMENT, "null src");
    vf = vd;
    vf.base_len = 80;
    CHECKF(vh5_copy_many_slices(&vs, &vf, 2, ss, ds, cc, sst, dst_, VH5_SLICES_CLIP) == VH5_ERR_BUFFER_TOO_SMALL, "short");
    CHECKF(strncmp(last(), "dst:", 4) == 0, "%s", msg);
}

int main(void) {
    const char *dir = getenv("VH5_SHARED_DATA");
    const char *tmp = getenv("VH5_TEST_TMP");
    char orig[1024], path[1200];
    memory_copies();
    if (!dir) dir = "../shared/data";
    if (!tmp) tmp = "/tmp";
    snprintf(orig, sizeof orig, "%s/real/test1.nc", dir);
    snprintf(path, sizeof path, "%s/vh5_test_write_copy.nc", tmp);
    FILE *probe = fopen(orig, "rb");
    if (!probe) {
        printf("SKIP test_write (HDF5 part): %s not found (set VH5_SHARED_DATA)\n", orig);
        return failures ? 1 : 0;
    }
    fclose(probe);

    /* read-only: refused, naming the flag */
    int64_t f = -1, d = -1;
    double src[6] = {1.5, 2.5, 3.5, 4.5, 5.5, 6.5};
    uint64_t sshape[3] = {2, 1, 3};
    int64_t fstr[3] = {8, 48, 16}; /* Fortran order of (2,1,3) */
    vh5_array vs = arr(src, sizeof src, 3, sshape, fstr);
    /* row 0: src[0:2, 0, 0:3] -> tas[3:8:4, 10, 100:106:2] (steps on the dataset side);
       row 1: src[1, 0, 2] -> tas[7, 10, 102] (overlaps row 0: later row wins). */
    uint64_t s[6] = {0, 0, 0, 1, 0, 2}, dd[6] = {3, 10, 100, 7, 10, 102}, c[6] = {2, 1, 3, 1, 1, 1};
    uint64_t sst[6] = {1, 1, 1, 1, 1, 1}, dst_[6] = {4, 1, 2, 1, 1, 1};
    vh5_status st = vh5_file_open(orig, 0, &f);
    CHECKF(st == VH5_OK, "open: %s", last());
    st = vh5_dataset_open(f, "/tas", &d);
    CHECKF(st == VH5_OK, "dataset: %s", last());
    st = vh5_write_many_slices(d, &vs, 2, s, dd, c, sst, dst_, 0);
    CHECKF(st == VH5_ERR_INVALID_ARGUMENT, "read-only: %d", (int)st);
    CHECKF(strstr(last(), "no write intent") && strstr(msg, "VH5_FILE_READ_WRITE"), "%s", msg);
    vh5_close(d);
    vh5_close(f);

    CHECKF(copy_file(orig, path) == 0, "copy %s", path);
    st = vh5_file_open(path, VH5_FILE_READ_WRITE, &f);
    CHECKF(st == VH5_OK, "open rw: %s", last());
    st = vh5_dataset_open(f, "/tas", &d);
    CHECKF(st == VH5_OK, "dataset: %s", last());
    /* before: read the 2x1x6 block tas[3:8:4, 10, 100:106] */
    double before[12], after[12];
    uint64_t bshape[3] = {2, 1, 6}, z[3] = {0, 0, 0}, rs[3] = {3, 10, 100}, rc[3] = {2, 1, 6}, rst[3] = {4, 1, 1};
    vh5_array vb = arr(before, sizeof before, 3, bshape, NULL), va = arr(after, sizeof after, 3, bshape, NULL);
    CHECKF(vh5_read_many_slices(d, &vb, 1, rs, z, rc, rst, NULL, 0) == VH5_OK, "%s", last());
    /* a bad row (out of bounds) writes nothing */
    uint64_t bad[6] = {3, 10, 100, 7, 10, 200};
    st = vh5_write_many_slices(d, &vs, 2, s, bad, c, sst, dst_, 0);
    CHECKF(st == VH5_ERR_OUT_OF_BOUNDS && strstr(last(), "row 1 axis 2"), "%s", msg);
    st = vh5_write_many_slices(d, &vs, 2, s, dd, c, sst, dst_, 0);
    CHECKF(st == VH5_OK, "write: %s", last());
    CHECKF(vh5_close(d) == VH5_OK && vh5_close(f) == VH5_OK, "close");
    /* re-open read-only and read back */
    CHECKF(vh5_file_open(path, 0, &f) == VH5_OK && vh5_dataset_open(f, "tas", &d) == VH5_OK, "%s", last());
    CHECKF(vh5_read_many_slices(d, &va, 1, rs, z, rc, rst, NULL, 0) == VH5_OK, "%s", last());
    {
        /* expected: row 0 puts src[i,0,k] (Fortran: src[i + 2k]) at after[i][0][2k];
           row 1 puts src[1,0,2] = src[5] at after[1][0][2]. */
        int i, k;
        double want[12];
        memcpy(want, before, sizeof want);
        for (i = 0; i < 2; i++)
            for (k = 0; k < 3; k++) want[i * 6 + 2 * k] = src[i + 2 * k];
        want[6 + 2] = src[5];
        for (i = 0; i < 12; i++) CHECKF(after[i] == want[i], "element %d: %g != %g", i, after[i], want[i]);
        CHECKF(after[1] == before[1] && after[1] != 0.0, "odd columns untouched");
    }
    vh5_close(d);
    vh5_close(f);
    remove(path);
    return finish("test_write");
}
