/* SPDX-License-Identifier: BSD-2-Clause */
/* convert_idx.c - `seqstore convert idx`: IDX files (MNIST, Fashion-MNIST),
 * plain or gzip, into one example per image.
 *
 * Schema: `image` (the IDX element type, a sequence) and, with --labels, a
 * fixed scalar `label` (the labels file's element type).
 *  --layout pixels (default): an image of [rows][cols][rest...] is a sequence
 *      of rows*cols time steps, each a row of shape [rest...] (a scalar for
 *      MNIST): pixel-sequence MNIST.
 *  --layout rows: a sequence of `rows` time steps of shape [cols][rest...].
 * Attributes: `image.shape` (u32 array: the IDX item dims, e.g. 28 28),
 * `image.layout` (TEXT "pixels" or "rows"), `label.names` (TEXT, one per line)
 * with --label-names. */
#include "convert.h"
#include "idx.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

typedef struct idx_file {
    const char *path;
    gzFile gz;
    ss_idx_header h;
    uint64_t pos; /* bytes consumed (uncompressed) */
} idx_file;

static void usage_idx(FILE *out) {
    fprintf(out, "usage: seqstore convert idx IMAGES[.gz] [--labels LABELS[.gz]] -o STORE\n"
                 "           [--layout pixels|rows] [--label-names a,b,...]\n"
                 "  IMAGES   IDX file of items (e.g. train-images-idx3-ubyte.gz), plain or gzip\n"
                 "  --labels IDX file of one scalar per item: a fixed `label` field; the item\n"
                 "           counts must match\n"
                 "  --layout pixels: one time step per pixel (rows*cols steps, default)\n"
                 "           rows:   one time step per image row ([rows][cols])\n"
                 "  --label-names comma-separated class names, stored as attribute label.names\n");
}

/* Read exactly n bytes; returns bytes read (< n at end of file), -1 on error. */
static long long gz_read_full(gzFile gz, void *buf, uint64_t n) {
    uint64_t got = 0;
    while (got < n) {
        unsigned chunk = n - got > (1u << 30) ? (1u << 30) : (unsigned)(n - got);
        int r = gzread(gz, (char *)buf + got, chunk);
        if (r < 0) return -1;
        if (r == 0) break;
        got += (uint64_t)r;
    }
    return (long long)got;
}

/* zlib's message without the "PATH: " it starts with (callers name the file). */
static const char *gz_errtext(gzFile gz, const char *path) {
    int errnum = 0;
    const char *m = gzerror(gz, &errnum);
    size_t pl = strlen(path);
    if (m && !strncmp(m, path, pl) && m[pl] == ':' && m[pl + 1] == ' ') m += pl + 2;
    return m && *m ? m : "read error";
}

/* Open and parse the header; on failure prints and returns 1. */
static int idx_open(ss_conv *c, idx_file *f, const char *path) {
    unsigned char hdr[4 + 4 * SS_IDX_MAX_DIMS];
    size_t need;
    long long got;
    memset(f, 0, sizeof *f);
    f->path = path;
    f->gz = gzopen(path, "rb");
    if (!f->gz) return ss__conv_error(c, "cannot open '%s'", path);
    gzbuffer(f->gz, 1u << 18);
    got = gz_read_full(f->gz, hdr, 4);
    if (got < 0) return ss__conv_error(c, "%s: %s", path, gz_errtext(f->gz, f->path));
    if (ss__idx_header_size(&need, hdr, (size_t)got) != 0)
        return ss__conv_error(c, "%s: %s", path, ss_error_message());
    got = gz_read_full(f->gz, hdr + 4, need - 4);
    if (got < 0) return ss__conv_error(c, "%s: %s", path, gz_errtext(f->gz, f->path));
    if (ss__idx_parse_header(&f->h, hdr, 4 + (size_t)got) != 0)
        return ss__conv_error(c, "%s: %s", path, ss_error_message());
    f->pos = f->h.header_bytes;
    return 0;
}

static void idx_close(idx_file *f) {
    if (f->gz) gzclose(f->gz);
    f->gz = NULL;
}

/* One item the header declares must fit in the file (a plain file holds it
 * byte for byte, a gzip file at most ~1032 times its size: deflate's largest
 * ratio), else allocating it is pointless. A file cut short later is
 * reported item by item. 0, or 1 after reporting (nothing allocated yet). */
static int idx_check_declared(ss_conv *c, const idx_file *f) {
    uint64_t size = ss__conv_file_size(f->path), ratio = gzdirect(f->gz) ? 1 : 1032;
    uint64_t item = f->h.item_elems * f->h.elem_size; /* <= 2^43: no overflow */
    if (size == 0 || item <= size * ratio) return 0;  /* size 0: not a regular file */
    return ss__conv_error(c,
                          "%s: the header declares items of %llu bytes each, more than the whole "
                          "file (%llu bytes%s) can hold",
                          f->path, (unsigned long long)item, (unsigned long long)size,
                          ratio == 1 ? "" : ", gzip-compressed");
}

/* Read item `k` (0-based) of f into buf; 0, or 1 after reporting. A short
 * read is bad input: there is no further item to go on with, so even with
 * --skip-bad the caller stops (*stop = 1). */
static int idx_read_item(ss_conv *c, idx_file *f, void *buf, uint64_t bytes, uint64_t k,
                         int *stop) {
    long long got = gz_read_full(f->gz, buf, bytes);
    if (got < 0) {
        *stop = 1;
        return ss__conv_bad(c, f->path, k + 1, "item %llu at byte %llu: %s",
                            (unsigned long long)k + 1, (unsigned long long)f->pos,
                            gz_errtext(f->gz, f->path));
    }
    if ((uint64_t)got < bytes) {
        *stop = 1;
        return ss__conv_bad(c, f->path, k + 1,
                            "truncated: item %llu of %u at byte %llu has %lld of %llu bytes",
                            (unsigned long long)k + 1, f->h.dims[0], (unsigned long long)f->pos, got,
                            (unsigned long long)bytes);
    }
    f->pos += bytes;
    ss__idx_to_host(buf, bytes / f->h.elem_size, f->h.elem_size);
    return 0;
}

/* After the last item: the file must end there, and a gzip stream must end
 * intact (its check value is read only now; a cut or damaged stream shows
 * only through gzerror, gzread returning 0 or -1). 0, or 1 after reporting. */
static int idx_check_end(ss_conv *c, idx_file *f) {
    unsigned char extra[4096];
    long long got = gz_read_full(f->gz, extra, sizeof extra);
    int zerr = Z_OK;
    gzerror(f->gz, &zerr);
    if (got < 0 || zerr != Z_OK)
        return ss__conv_bad(c, f->path, 0, "after the last item (byte %llu): %s",
                            (unsigned long long)f->pos, gz_errtext(f->gz, f->path));
    if (got > 0)
        return ss__conv_bad(c, f->path, 0, "%s bytes after the last of its %u items (byte %llu)",
                            got == (long long)sizeof extra ? "more" : "unexpected", f->h.dims[0],
                            (unsigned long long)f->pos);
    return 0;
}

/* Fill the image field from the header and the layout. */
static int image_field(ss_conv *c, const idx_file *img, int rows_layout, ss_field *fld,
                       uint64_t *steps) {
    const ss_idx_header *h = &img->h;
    uint32_t first_trailing = rows_layout ? 2 : (h->ndim >= 3 ? 3 : 2);
    memset(fld, 0, sizeof *fld);
    fld->name = "image";
    fld->dtype = h->dtype;
    fld->sequence = 1;
    if (h->ndim < 2)
        return ss__conv_error(c, "%s: IDX file has %u dimension; images need at least 2", img->path,
                              h->ndim);
    if (h->ndim - first_trailing > SS_MAX_DIMS)
        return ss__conv_error(c, "%s: IDX items have %u dimensions; at most %d fit a row",
                              img->path,
                              h->ndim - 1, SS_MAX_DIMS + 1);
    *steps = 1;
    for (uint32_t k = 1; k < first_trailing; k++) *steps *= h->dims[k];
    for (uint32_t k = first_trailing; k < h->ndim; k++) fld->dims[fld->ndim++] = h->dims[k];
    return 0;
}

/* "a,b,c" -> "a\nb\nc" in a new string. */
static char *names_text(const char *csv) {
    char *t = strdup(csv);
    if (!t) return NULL;
    for (char *p = t; *p; p++)
        if (*p == ',') *p = '\n';
    return t;
}

static int convert_items(ss_conv *c, idx_file *img, idx_file *lab, uint64_t steps, uint64_t skip) {
    uint64_t n = img->h.dims[0];
    uint64_t ibytes = img->h.item_elems * img->h.elem_size;
    uint64_t lbytes = lab->gz ? lab->h.elem_size : 0;
    unsigned char lbuf[8];
    unsigned char *ibuf = malloc(ibytes ? ibytes : 1);
    int rc = 0, stop = 0;
    if (!ibuf) return ss__conv_error(c, "out of memory");
    for (uint64_t k = 0; k < n && !stop; k++) {
        if (idx_read_item(c, img, ibuf, ibytes, k, &stop) != 0) {
            rc = 1;
            break;
        }
        if (stop) break;
        if (lab->gz) {
            if (idx_read_item(c, lab, lbuf, lbytes, k, &stop) != 0) {
                rc = 1;
                break;
            }
            if (stop) break;
        }
        if (skip) {
            skip--;
            continue;
        }
        ss_value v[2] = {{ibuf, steps}, {lbuf, 1}};
        if (ss__conv_append_at(c, v, 0, k + 1, k) != 0) {
            rc = 1;
            break;
        }
        ss__conv_progress(c, ibytes + lbytes);
    }
    free(ibuf);
    if (rc == 0 && !stop) rc = idx_check_end(c, img);
    if (rc == 0 && !stop && lab->gz) rc = idx_check_end(c, lab);
    return rc;
}

static int run_idx(ss_conv *c, int argc, char **argv) {
    const char *images = NULL, *labels = NULL, *label_names = NULL;
    int rows_layout = 0, rc;
    idx_file img, lab;
    ss_field fields[2];
    uint64_t steps = 0, skip = 0;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if ((!strcmp(a, "--labels") || !strcmp(a, "--layout") || !strcmp(a, "--label-names")) &&
            i + 1 >= argc)
            return ss__conv_usage_error(c, "%s needs a value", a);
        if (!strcmp(a, "--labels"))
            labels = argv[++i];
        else if (!strcmp(a, "--label-names"))
            label_names = argv[++i];
        else if (!strcmp(a, "--layout")) {
            const char *v = argv[++i];
            if (!strcmp(v, "rows"))
                rows_layout = 1;
            else if (!strcmp(v, "pixels"))
                rows_layout = 0;
            else
                return ss__conv_usage_error(c, "--layout must be pixels or rows, not '%s'", v);
        } else if (a[0] == '-' && a[1] != '\0')
            return ss__conv_usage_error(c, "unknown option '%s'", a);
        else if (!images)
            images = a;
        else
            return ss__conv_usage_error(c, "one IMAGES file only (got '%s' too)", a);
    }
    if (!images) return ss__conv_usage_error(c, "no IMAGES file given");

    memset(&lab, 0, sizeof lab);
    ss__conv_add_source(c, images);
    if (idx_open(c, &img, images) != 0) {
        idx_close(&img);
        return 1;
    }
    rc = idx_check_declared(c, &img);
    /* --shard: items are sliced by number; the labels follow the images */
    if (rc == 0) rc = ss__conv_shard_size(c, 0, img.h.dims[0]);
    if (rc == 0) rc = image_field(c, &img, rows_layout, &fields[0], &steps);
    if (rc == 0 && labels) {
        ss__conv_add_source(c, labels);
        rc = ss__conv_shard_size(c, 1, 0);
        if (rc == 0) rc = idx_open(c, &lab, labels);
        if (rc == 0) rc = idx_check_declared(c, &lab);
        if (rc == 0 && lab.h.item_elems != 1)
            rc = ss__conv_error(c, "%s: labels must be one scalar per item, not %llu", labels,
                                (unsigned long long)lab.h.item_elems);
        if (rc == 0 && lab.h.dims[0] != img.h.dims[0])
            rc = ss__conv_error(c, "%s: %u labels (header byte 4) but %s has %u images", labels,
                                lab.h.dims[0], images, img.h.dims[0]);
        memset(&fields[1], 0, sizeof fields[1]);
        fields[1].name = "label";
        fields[1].dtype = lab.h.dtype;
    }
    if (rc == 0) {
        ss_schema schema = {labels ? 2u : 1u, fields};
        rc = ss__conv_begin(c, &schema, &skip);
    }
    if (rc == 0) {
        uint32_t shape[SS_IDX_MAX_DIMS];
        const char *layout = rows_layout ? "rows" : "pixels";
        for (uint32_t k = 1; k < img.h.ndim; k++) shape[k - 1] = img.h.dims[k];
        rc = ss__conv_set_attr(c, "image.shape", SS_U32, shape, 4 * (size_t)(img.h.ndim - 1));
        if (rc == 0) rc = ss__conv_set_attr(c, "image.layout", SS_ATTR_TEXT, layout,
                                            strlen(layout));
        if (rc == 0 && label_names) {
            char *t = names_text(label_names);
            rc = t ? ss__conv_set_attr(c, "label.names", SS_ATTR_TEXT, t, strlen(t))
                   : ss__conv_error(c, "out of memory");
            free(t);
        }
    }
    if (rc == 0) {
        ss__conv_set_total(c, (uint64_t)img.h.dims[0] *
                                 (img.h.item_elems * img.h.elem_size + lab.h.elem_size));
        rc = convert_items(c, &img, &lab, steps, skip);
    }
    idx_close(&img);
    idx_close(&lab);
    return rc;
}

const ss_converter ss__converter_idx = {
    "idx", "IDX images (MNIST, Fashion-MNIST; plain or .gz) as pixel or row sequences", run_idx,
    usage_idx};
