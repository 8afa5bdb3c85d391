/* SPDX-License-Identifier: BSD-2-Clause */
/* cmd_info.c - `seqstore info`: what a store holds. */
#include "commands.h"
#include "store.h" /* ss__dataset_shard_count */

#include <getopt.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

/* Bins of the length histogram: at most this many, of a width 1, 2 or 5 x 10^k. */
#define SS_HIST_MAX_BINS 10
/* The longest bar, in character cells (eighths of a cell drawn with U+2589..U+258F). */
#define SS_HIST_BAR_CELLS 40

typedef struct ss_length_stats {
    uint64_t min, max, p50, p95, total;
    double mean;
    uint64_t bin_start, bin_width, nbins; /* bin k holds lengths [start + k w, start + (k+1) w) */
    uint64_t counts[SS_HIST_MAX_BINS];
} ss_length_stats;

/* The histogram of sorted lengths: the smallest 1-2-5 width that needs at
 * most SS_HIST_MAX_BINS bins, aligned to a multiple of the width. */
static void ss_histogram(const uint64_t *sorted, uint64_t n, ss_length_stats *st) {
    uint64_t w = 1, span = st->max - st->min;
    for (uint64_t decade = 1;; decade *= 10) {
        static const uint64_t steps[] = {1, 2, 5};
        int found = 0;
        for (int k = 0; k < 3 && !found; k++) {
            w = steps[k] * decade;
            found = (st->max / w - st->min / w) < SS_HIST_MAX_BINS;
        }
        if (found || decade > UINT64_MAX / 100 || span / decade == 0) break;
    }
    st->bin_width = w;
    st->bin_start = st->min / w * w;
    st->nbins = st->max / w - st->min / w + 1;
    if (st->nbins > SS_HIST_MAX_BINS) st->nbins = SS_HIST_MAX_BINS; /* lengths near 2^64 only */
    for (uint64_t i = 0; i < n; i++) {
        uint64_t b = (sorted[i] - st->bin_start) / w;
        st->counts[b < st->nbins ? b : st->nbins - 1]++;
    }
}

static int ss_cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Length statistics from the index alone (no data page is read). */
static int ss_field_stats(const ss_store *s, uint32_t f, ss_length_stats *out) {
    uint64_t n = ss_count(s);
    memset(out, 0, sizeof *out);
    if (n == 0) return 0;
    uint64_t *len = malloc(n * sizeof *len);
    if (!len) return SS_ENOMEM;
    int rc = ss_lengths(len, s, f, 0, n);
    if (rc == 0) {
        for (uint64_t i = 0; i < n; i++) out->total += len[i];
        qsort(len, n, sizeof *len, ss_cmp_u64);
        out->min = len[0];
        out->max = len[n - 1];
        out->p50 = len[(n - 1) / 2];
        out->p95 = len[(uint64_t)((double)(n - 1) * 0.95)];
        out->mean = (double)out->total / (double)n;
        ss_histogram(len, n, out);
    }
    free(len);
    return rc;
}

static void ss_shape_text(const ss_field *f, char *buf, size_t cap) {
    size_t n = (size_t)snprintf(buf, cap, "[%s", f->sequence ? "T" : "");
    for (uint32_t d = 0; d < f->ndim && n < cap; d++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%llu", (f->sequence || d) ? "," : "",
                              (unsigned long long)f->dims[d]);
    if (n < cap) snprintf(buf + n, cap - n, "]");
}

/* A value info could not read: shown where it belongs and on stderr, and
 * counted, so that info exits non-zero (a damaged attribute is an error,
 * not a line to overlook). */
static void ss_info_problem(uint64_t *problems) {
    fprintf(stderr, "seqstore info: %s\n", ss_error_message());
    ++*problems;
}

static json_t *ss_info_json(const ss_store *s, const char *path, uint64_t *problems) {
    ss_store_info info;
    int unreadable = ss_store_get_info(&info, s) != 0; /* a dataset's missing shard */
    json_t *root = json_object(), *fields = json_array(), *attrs = json_array();
    ss__json_set_text(root, "path", path, strlen(path));
    json_object_set_new(root, "format_version", json_integer(info.format_version));
    json_object_set_new(root, "complete", json_boolean(info.complete && !unreadable));
    if (unreadable) {
        ss__json_set_text(root, "error", ss_error_message(), strlen(ss_error_message()));
        ss_info_problem(problems);
    }
    if (ss__dataset_shard_count(s))
        json_object_set_new(root, "shards", json_integer(ss__dataset_shard_count(s)));
    json_object_set_new(root, "examples", json_integer((json_int_t)info.count));
    json_object_set_new(root, "file_bytes", json_integer((json_int_t)info.file_bytes));
    json_object_set_new(root, "chunk_bytes", json_integer((json_int_t)info.chunk_bytes));
    json_object_set_new(root, "data_chunks", json_integer((json_int_t)info.data_chunks));
    for (uint32_t f = 0; f < ss_field_count(s); f++) {
        ss_field d;
        ss_field_info(&d, s, f);
        json_t *jf = json_object(), *shape = json_array();
        ss__json_set_text(jf, "name", d.name, strlen(d.name));
        json_object_set_new(jf, "dtype", json_string(ss_dtype_name(d.dtype)));
        json_object_set_new(jf, "sequence", json_boolean(d.sequence));
        for (uint32_t k = 0; k < d.ndim; k++)
            json_array_append_new(shape, json_integer((json_int_t)d.dims[k]));
        json_object_set_new(jf, "shape", shape);
        ss_length_stats st;
        if (d.sequence && ss_field_stats(s, f, &st)) {
            json_t *js = json_object();
            json_object_set_new(js, "error", json_string(ss_error_message()));
            json_object_set_new(jf, "lengths", js);
            ss_info_problem(problems);
        } else if (d.sequence) {
            json_t *js = json_object();
            json_object_set_new(js, "min", json_integer((json_int_t)st.min));
            json_object_set_new(js, "mean", json_real(st.mean));
            json_object_set_new(js, "p50", json_integer((json_int_t)st.p50));
            json_object_set_new(js, "p95", json_integer((json_int_t)st.p95));
            json_object_set_new(js, "max", json_integer((json_int_t)st.max));
            json_object_set_new(js, "total", json_integer((json_int_t)st.total));
            json_t *jh = json_object(), *edges = json_array(), *counts = json_array();
            for (uint64_t k = 0; k < st.nbins; k++) {
                json_array_append_new(edges,
                                      json_integer((json_int_t)(st.bin_start + k * st.bin_width)));
                json_array_append_new(counts, json_integer((json_int_t)st.counts[k]));
            }
            if (st.nbins)
                json_array_append_new(
                    edges, json_integer((json_int_t)(st.bin_start + st.nbins * st.bin_width)));
            json_object_set_new(jh, "edges", edges);
            json_object_set_new(jh, "counts", counts);
            json_object_set_new(js, "histogram", jh);
            json_object_set_new(jf, "lengths", js);
        }
        json_array_append_new(fields, jf);
    }
    json_object_set_new(root, "fields", fields);
    for (uint64_t k = 0; k < ss_attr_count(s); k++) {
        ss_attr a;
        json_t *ja;
        int rc = ss_attr_at(&a, s, k);
        if (rc != 0) {
            ja = json_object();
            if (rc == SS_ECORRUPT) ss__json_set_text(ja, "name", a.name, strlen(a.name));
            json_object_set_new(ja, "error", json_string(ss_error_message()));
            ss_info_problem(problems);
        } else {
            ja = ss__json_attr(&a);
        }
        json_array_append_new(attrs, ja);
    }
    json_object_set_new(root, "attributes", attrs);
    return root;
}

/* The length histogram as a few lines of bars in eighths of a cell. */
static void ss_print_histogram(const ss_length_stats *st) {
    static const char *const eighths[] = {"",       "\u258F", "\u258E", "\u258D",
                                          "\u258C", "\u258B", "\u258A", "\u2589"};
    uint64_t top = 0;
    int digits = snprintf(NULL, 0, "%llu",
                          (unsigned long long)(st->bin_start + st->nbins * st->bin_width - 1));
    for (uint64_t k = 0; k < st->nbins; k++)
        if (st->counts[k] > top) top = st->counts[k];
    for (uint64_t k = 0; k < st->nbins && top; k++) {
        uint64_t lo = st->bin_start + k * st->bin_width, hi = lo + st->bin_width - 1;
        /* eighths of a cell, rounded up so that a non-empty bin always shows */
        uint64_t e = (st->counts[k] * SS_HIST_BAR_CELLS * 8 + top - 1) / top;
        printf("      %*llu..%-*llu ", digits, (unsigned long long)lo, digits,
               (unsigned long long)hi);
        for (uint64_t c = 0; c < e / 8; c++) fputs("\u2588", stdout);
        fputs(eighths[e % 8], stdout);
        printf("%*s %llu\n", (int)(SS_HIST_BAR_CELLS - e / 8 - (e % 8 != 0)), "",
               (unsigned long long)st->counts[k]);
    }
}

static void ss_info_text(const ss_store *s, const char *path, uint64_t *problems) {
    ss_store_info info;
    int unreadable = ss_store_get_info(&info, s) != 0; /* a dataset's missing shard */
    printf("store       %s\n", path);
    if (unreadable) {
        printf("format      version %u, %s\n", info.format_version, ss_error_message());
        ss_info_problem(problems);
    } else {
        printf("format      version %u, %s\n", info.format_version,
               info.complete ? "complete" : "INCOMPLETE (committed prefix)");
    }
    printf("examples    %llu\n", (unsigned long long)info.count);
    if (ss__dataset_shard_count(s))
        printf("dataset     %u shards (files and chunks below: their sums)\n",
               ss__dataset_shard_count(s));
    printf("file        %llu bytes (%.1f MiB), %llu data chunks of up to %llu bytes\n",
           (unsigned long long)info.file_bytes, (double)info.file_bytes / 1048576.0,
           (unsigned long long)info.data_chunks, (unsigned long long)info.chunk_bytes);
    printf("fields\n");
    for (uint32_t f = 0; f < ss_field_count(s); f++) {
        ss_field d;
        char shape[128];
        ss_field_info(&d, s, f);
        ss_shape_text(&d, shape, sizeof shape);
        printf("  %-12s %-5s %-12s", d.name, ss_dtype_name(d.dtype), shape);
        ss_length_stats st = {0};
        int bad = d.sequence && ss_field_stats(s, f, &st) != 0;
        if (bad) {
            printf(" (lengths: %s)", ss_error_message());
            ss_info_problem(problems);
        } else if (d.sequence)
            printf(" length min %llu mean %.1f p50 %llu p95 %llu max %llu total %llu",
                   (unsigned long long)st.min, st.mean, (unsigned long long)st.p50,
                   (unsigned long long)st.p95, (unsigned long long)st.max,
                   (unsigned long long)st.total);
        else
            printf(" one row per example");
        printf("\n");
        if (!bad && d.sequence && ss_count(s) > 0 && st.nbins) ss_print_histogram(&st);
    }
    printf("attributes  %llu\n", (unsigned long long)ss_attr_count(s));
    for (uint64_t k = 0; k < ss_attr_count(s); k++) {
        ss_attr a;
        if (ss_attr_at(&a, s, k) != 0) {
            printf("  (attribute %llu: %s)\n", (unsigned long long)k, ss_error_message());
            ss_info_problem(problems);
            continue;
        }
        printf("  %-24s %-5s %8llu bytes", a.name, ss__cli_attr_type_name(a.type),
               (unsigned long long)a.size);
        ss__cli_print_attr_preview(&a);
        printf("\n");
    }
}

static void ss_info_usage(FILE *out) {
    fprintf(out, "usage: seqstore info STORE [--json] [--nolock] [--incomplete]\n\n"
                 "Print the examples, fields (dtype, shape), length statistics per field\n"
                 "(min, mean, p50, p95, max, total; from the index alone) with a histogram\n"
                 "of the lengths (at most 10 bins of width 1, 2 or 5 x 10^k), file size,\n"
                 "attributes with their values (text and the first elements of arrays),\n"
                 "format version and whether the store is complete.\n\n"
                 "--json carries every value whole: text as a string, typed arrays as\n"
                 "lists, bytes as base64 (\"value_base64\"); histograms as \"edges\" (bin k\n"
                 "is [edges[k], edges[k+1])) and \"counts\". JSON strings are Unicode: text\n"
                 "that is not valid UTF-8 (e.g. a Latin-1 file name) has U+FFFD for each\n"
                 "invalid byte and, beside it, KEY_base64 with the exact bytes.\n\n"
                 "What cannot be read (an attribute whose checksum fails) is shown in its\n"
                 "place (\"error\" in --json), named on stderr, and makes the exit status 1.\n\n"
                 "  --json        one JSON object on stdout\n"
                 "  --nolock      open without a lock file (read-only media; no writer may run)\n"
                 "  --incomplete  show the committed part of an unfinished store\n");
}

int ss__cmd_info(int argc, char **argv) {
    static const struct option longopts[] = {{"json", no_argument, 0, 'j'},
                                             {"nolock", no_argument, 0, 'n'},
                                             {"incomplete", no_argument, 0, 'i'},
                                             {"help", no_argument, 0, 'h'},
                                             {0, 0, 0, 0}};
    int json = 0, c;
    unsigned flags = 0;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        if (c == 'j')
            json = 1;
        else if (c == 'n')
            flags |= SS_OPEN_NOLOCK;
        else if (c == 'i')
            flags |= SS_OPEN_INCOMPLETE;
        else if (c == 'h') {
            ss_info_usage(stdout);
            return SS_EXIT_OK;
        } else
            return ss__cli_bad_option("info", c, argv);
    }
    if (optind != argc - 1) return ss__cli_usage_error("info", "expected one STORE");
    ss_store *s;
    if (ss__cli_open(&s, "info", argv[optind], flags)) return SS_EXIT_ERROR;
    uint64_t problems = 0;
    if (json) {
        json_t *root = ss_info_json(s, argv[optind], &problems);
        ss__json_print(root);
        json_decref(root);
    } else {
        ss_info_text(s, argv[optind], &problems);
    }
    ss_close(s);
    return problems ? SS_EXIT_ERROR : SS_EXIT_OK;
}
