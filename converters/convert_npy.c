/* SPDX-License-Identifier: BSD-2-Clause */
/* convert_npy.c - `seqstore convert npy`: NumPy .npy files, one example each.
 *
 * Each file's first axis is time; the remaining axes are the row shape. All
 * files must agree on dtype and trailing shape (the first readable file sets
 * them); a file that disagrees, is truncated or malformed is bad input
 * (rejected, or skipped with --skip-bad). Big-endian data is byte-swapped.
 * Schema: one sequence field, `data` unless --field NAME. */
#include "convert.h"
#include "npy.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static void usage_npy(FILE *out) {
    fprintf(out,
            "usage: seqstore convert npy FILE.npy... -o STORE [--field NAME]\n"
            "  each FILE is one example; its first axis is time, the others the row\n"
            "  shape (at most %d). Versions 1-3, either byte order, C order only.\n"
            "  --field NAME  name of the field (default: data)\n",
            SS_MAX_DIMS);
}

/* Read and check the header of `path`; 0 with *fp open after the header, or
 * 1 with the message in `err` (the file is bad input). */
static int npy_open(FILE **fp, ss_npy_header *h, const char *path, char *err, size_t errlen) {
    unsigned char pre[SS_NPY_PREAMBLE], *hdr = NULL;
    size_t got, need;
    FILE *f = fopen(path, "rb");
    *fp = NULL;
    if (!f) {
        snprintf(err, errlen, "cannot open: %s", strerror(errno));
        return 1;
    }
    struct stat st;
    if (fstat(fileno(f), &st) != 0) memset(&st, 0, sizeof st);
    if (S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "is a directory, not a .npy file");
        goto fail;
    }
    got = fread(pre, 1, sizeof pre, f);
    if (ferror(f)) {
        snprintf(err, errlen, "read error: %s", strerror(errno));
        goto fail;
    }
    if (ss__npy_header_size(&need, pre, got) != 0) goto bad;
    if (need > got) {
        hdr = malloc(need);
        if (!hdr) {
            snprintf(err, errlen, "out of memory for a %zu-byte header", need);
            fclose(f);
            return 1;
        }
        memcpy(hdr, pre, got);
        got += fread(hdr + got, 1, need - got, f);
        if (ferror(f)) {
            snprintf(err, errlen, "read error in the header: %s", strerror(errno));
            goto fail;
        }
    }
    if (ss__npy_parse_header(h, hdr ? hdr : pre, got) != 0) goto bad;
    if (h->ndim == 0) {
        snprintf(err, errlen, "0-d array: no first (time) axis");
        goto fail;
    }
    if (h->ndim - 1 > SS_MAX_DIMS) {
        snprintf(err, errlen, "%u axes: at most %d trailing axes are supported", h->ndim,
                 SS_MAX_DIMS);
        goto fail;
    }
    uint64_t bytes;
    uint64_t avail = (uint64_t)st.st_size > h->data_offset ? st.st_size - h->data_offset : 0;
    if (__builtin_mul_overflow(h->count, (uint64_t)h->elem_size, &bytes) ||
        (S_ISREG(st.st_mode) && bytes > avail)) {
        snprintf(err, errlen,
                 "truncated: the header declares %llu elements of %u bytes, more than the %llu "
                 "bytes the file holds after its header",
                 (unsigned long long)h->count, h->elem_size, (unsigned long long)avail);
        goto fail;
    }
    if (fseeko(f, (off_t)h->data_offset, SEEK_SET) != 0) {
        snprintf(err, errlen, "seek to byte %llu: %s", (unsigned long long)h->data_offset,
                 strerror(errno));
        goto fail;
    }
    free(hdr);
    *fp = f;
    return 0;
bad:
    snprintf(err, errlen, "%s", ss_error_message());
fail:
    free(hdr);
    fclose(f);
    return 1;
}

/* The field a header describes. */
static void npy_field(ss_field *fld, const ss_npy_header *h, const char *name) {
    memset(fld, 0, sizeof *fld);
    fld->name = name;
    fld->dtype = h->dtype;
    fld->sequence = 1;
    fld->ndim = h->ndim - 1;
    for (uint32_t k = 1; k < h->ndim; k++) fld->dims[k - 1] = h->shape[k];
}

/* Why the file's field differs from the schema's, or NULL. */
static const char *npy_mismatch(const ss_field *want, const ss_field *got, char *buf, size_t len) {
    int n = 0;
    if (want->dtype != got->dtype) {
        snprintf(buf, len, "dtype %s differs from the first file's %s", ss_dtype_name(got->dtype),
                 ss_dtype_name(want->dtype));
        return buf;
    }
    if (want->ndim == got->ndim) {
        uint32_t k = 0;
        while (k < want->ndim && want->dims[k] == got->dims[k]) k++;
        if (k == want->ndim) return NULL;
    }
    n += snprintf(buf + n, len - (size_t)n, "trailing shape (");
    for (uint32_t k = 0; k < got->ndim && (size_t)n < len; k++)
        n += snprintf(buf + n, len - (size_t)n, "%s%llu", k ? "," : "",
                      (unsigned long long)got->dims[k]);
    if ((size_t)n < len)
        n += snprintf(buf + n, len - (size_t)n, ") differs from the first file's (");
    for (uint32_t k = 0; k < want->ndim && (size_t)n < len; k++)
        n += snprintf(buf + n, len - (size_t)n, "%s%llu", k ? "," : "",
                      (unsigned long long)want->dims[k]);
    if ((size_t)n < len) snprintf(buf + n, len - (size_t)n, ")");
    return buf;
}

/* Read the data of an opened file into *buf (grown as needed); 0 or 1 with `err`. */
static int npy_read(FILE *f, const ss_npy_header *h, unsigned char **buf, size_t *cap, char *err,
                    size_t errlen) {
    uint64_t bytes = h->count * h->elem_size;
    size_t got;
    if (bytes > *cap) {
        unsigned char *nb = realloc(*buf, (size_t)bytes);
        if (!nb) {
            snprintf(err, errlen, "out of memory for %llu bytes of data",
                     (unsigned long long)bytes);
            return 1;
        }
        *buf = nb, *cap = (size_t)bytes;
    }
    got = fread(*buf, 1, (size_t)bytes, f);
    if (ferror(f)) {
        snprintf(err, errlen, "read error in the data: %s", strerror(errno));
        return 1;
    }
    if (got < bytes) {
        snprintf(err, errlen, "truncated: data at byte %llu has %zu of %llu bytes",
                 (unsigned long long)h->data_offset, got, (unsigned long long)bytes);
        return 1;
    }
    if (fgetc(f) != EOF) {
        snprintf(err, errlen, "trailing bytes after the data, at byte %llu",
                 (unsigned long long)(h->data_offset + bytes));
        return 1;
    }
    if (h->swap) ss__npy_swap(*buf, h->count, h->elem_size);
    return 0;
}

static int run_npy(ss_conv *c, int argc, char **argv) {
    const char *name = "data";
    char **files = calloc((size_t)argc, sizeof *files);
    int nfiles = 0, rc = 0, have = 0;
    ss_field field;
    unsigned char *buf = NULL;
    size_t cap = 0;
    uint64_t skip = 0, total = 0;
    char err[512], why[256];

    if (!files) return ss__conv_error(c, "out of memory");
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--field")) {
            if (i + 1 >= argc) {
                free(files);
                return ss__conv_usage_error(c, "--field needs a value");
            }
            name = argv[++i];
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            free(files);
            return ss__conv_usage_error(c, "unknown option '%s'", argv[i]);
        } else {
            files[nfiles++] = argv[i];
        }
    }
    if (nfiles == 0) {
        free(files);
        return ss__conv_usage_error(c, "no input files");
    }
    /* The first readable file sets the schema; bad files are reported below. */
    for (int i = 0; i < nfiles; i++) {
        ss_npy_header h;
        FILE *f;
        ss__conv_add_source(c, files[i]);
        total += ss__conv_file_size(files[i]);
        if (!have && npy_open(&f, &h, files[i], err, sizeof err) == 0) {
            npy_field(&field, &h, name);
            have = 1;
            fclose(f);
        }
    }
    if (!have) {
        /* every file is bad: report the first (with --skip-bad, all of them) */
        for (int i = 0; i < nfiles && rc == 0; i++) {
            FILE *f;
            ss_npy_header h;
            npy_open(&f, &h, files[i], err, sizeof err);
            rc = ss__conv_bad(c, files[i], 0, "%s", err);
        }
        free(files);
        return rc ? rc : ss__conv_error(c, "no readable .npy file among the inputs");
    }
    {
        ss_schema schema = {1, &field};
        rc = ss__conv_begin(c, &schema, &skip);
    }
    ss__conv_set_total(c, total);
    for (int i = 0; i < nfiles && rc == 0; i++) {
        if (!ss__conv_in_shard(c, (uint32_t)i)) continue; /* --shard: another shard's file */
        ss_npy_header h;
        ss_field got;
        FILE *f;
        const char *bad = NULL;
        if (npy_open(&f, &h, files[i], err, sizeof err) != 0) bad = err;
        if (!bad) {
            npy_field(&got, &h, name);
            bad = npy_mismatch(&field, &got, why, sizeof why);
            if (!bad && npy_read(f, &h, &buf, &cap, err, sizeof err) != 0) bad = err;
            fclose(f);
        }
        if (bad) {
            rc = ss__conv_bad(c, files[i], 0, "%s", bad);
            continue;
        }
        if (skip) {
            skip--;
            continue;
        }
        ss_value v = {buf, h.shape[0]};
        rc = ss__conv_append(c, &v, (uint32_t)i, 1);
        ss__conv_progress(c, ss__conv_file_size(files[i]));
    }
    free(buf);
    free(files);
    return rc;
}

const ss_converter ss__converter_npy = {
    "npy", "NumPy .npy arrays, one example per file (first axis = time)", run_npy, usage_npy};
