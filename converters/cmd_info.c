/* cmd_info.c - `seqstore info`: what a store holds. */
#include "commands.h"
#include "utf8.h"

#include <getopt.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

/* attribute arrays longer than this show their first elements only (text) */
#define SS_INFO_MAX_ELEMENTS 8

typedef struct ss_length_stats {
    uint64_t min, max, p50, p95, total;
    double mean;
} ss_length_stats;

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
    int rc = ss_lengths(s, f, 0, n, len);
    if (rc == 0) {
        for (uint64_t i = 0; i < n; i++) out->total += len[i];
        qsort(len, n, sizeof *len, ss_cmp_u64);
        out->min = len[0];
        out->max = len[n - 1];
        out->p50 = len[(n - 1) / 2];
        out->p95 = len[(uint64_t)((double)(n - 1) * 0.95)];
        out->mean = (double)out->total / (double)n;
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

static json_t *ss_info_json(const ss_store *s, const char *path) {
    ss_store_info info;
    ss_store_get_info(s, &info);
    json_t *root = json_object(), *fields = json_array(), *attrs = json_array();
    ss_json_set_text(root, "path", path, strlen(path));
    json_object_set_new(root, "format_version", json_integer(info.format_version));
    json_object_set_new(root, "complete", json_boolean(info.complete));
    json_object_set_new(root, "examples", json_integer((json_int_t)info.count));
    json_object_set_new(root, "file_bytes", json_integer((json_int_t)info.file_bytes));
    json_object_set_new(root, "chunk_bytes", json_integer((json_int_t)info.chunk_bytes));
    json_object_set_new(root, "data_chunks", json_integer((json_int_t)info.data_chunks));
    for (uint32_t f = 0; f < ss_field_count(s); f++) {
        ss_field d;
        ss_field_info(s, f, &d);
        json_t *jf = json_object(), *shape = json_array();
        ss_json_set_text(jf, "name", d.name, strlen(d.name));
        json_object_set_new(jf, "dtype", json_string(ss_dtype_name(d.dtype)));
        json_object_set_new(jf, "sequence", json_boolean(d.sequence));
        for (uint32_t k = 0; k < d.ndim; k++)
            json_array_append_new(shape, json_integer((json_int_t)d.dims[k]));
        json_object_set_new(jf, "shape", shape);
        if (d.sequence) {
            ss_length_stats st;
            ss_field_stats(s, f, &st);
            json_t *js = json_object();
            json_object_set_new(js, "min", json_integer((json_int_t)st.min));
            json_object_set_new(js, "mean", json_real(st.mean));
            json_object_set_new(js, "p50", json_integer((json_int_t)st.p50));
            json_object_set_new(js, "p95", json_integer((json_int_t)st.p95));
            json_object_set_new(js, "max", json_integer((json_int_t)st.max));
            json_object_set_new(js, "total", json_integer((json_int_t)st.total));
            json_object_set_new(jf, "lengths", js);
        }
        json_array_append_new(fields, jf);
    }
    json_object_set_new(root, "fields", fields);
    for (uint64_t k = 0; k < ss_attr_count(s); k++) {
        ss_attr a;
        json_t *ja;
        if (ss_attr_at(s, k, &a) != 0) {
            ja = json_object();
            json_object_set_new(ja, "error", json_string(ss_error_message()));
        } else {
            ja = ss_json_attr(&a);
        }
        json_array_append_new(attrs, ja);
    }
    json_object_set_new(root, "attributes", attrs);
    return root;
}

/* Text shown on one line: newlines as '|', other control characters and
 * bytes that are not UTF-8 as \xHH; at most `max` bytes of it. */
static void ss_print_text_preview(const unsigned char *p, uint64_t size, uint64_t max) {
    uint64_t n = size < max ? size : max;
    putchar('"');
    for (uint64_t i = 0, len; i < n; i += len) {
        len = ss_utf8_seq(p + i, (size_t)(size - i));
        if (len == 1 && p[i] == '\n')
            putchar('|');
        else if (len == 1 && (p[i] < 32 || p[i] == 127))
            printf("\\x%02x", p[i]);
        else if (len)
            fwrite(p + i, 1, (size_t)len, stdout);
        else
            printf("\\x%02x", p[i]), len = 1;
    }
    printf("%s\"", size > n ? "..." : "");
}

/* A typed array's first elements. */
static void ss_print_array_preview(const ss_attr *a) {
    size_t es = ss_dtype_size((ss_dtype)a->type);
    uint64_t n = es ? a->size / es : 0;
    putchar('[');
    for (uint64_t i = 0; i < n && i < SS_INFO_MAX_ELEMENTS; i++) {
        const void *p = (const char *)a->data + i * es;
        if (i) printf(", ");
        if (a->type == SS_F16 || a->type == SS_BF16 || a->type == SS_F32 || a->type == SS_F64)
            printf("%.9g", ss_cli_element_double(p, (ss_dtype)a->type));
        else {
            json_t *j = ss_json_element(p, (ss_dtype)a->type);
            char *t = json_dumps(j, JSON_ENCODE_ANY);
            fputs(t ? t : "?", stdout);
            free(t);
            json_decref(j);
        }
    }
    printf("%s]", n > SS_INFO_MAX_ELEMENTS ? ", ..." : "");
}

static void ss_print_attr_value(const ss_attr *a) {
    printf("  ");
    if (a->type == SS_ATTR_TEXT)
        ss_print_text_preview(a->data, a->size, 60);
    else if (a->type != SS_ATTR_BYTES && ss_dtype_name((ss_dtype)a->type))
        ss_print_array_preview(a);
}

static void ss_info_text(const ss_store *s, const char *path) {
    ss_store_info info;
    ss_store_get_info(s, &info);
    printf("store       %s\n", path);
    printf("format      version %u, %s\n", info.format_version,
           info.complete ? "complete" : "INCOMPLETE (committed prefix)");
    printf("examples    %llu\n", (unsigned long long)info.count);
    printf("file        %llu bytes (%.1f MiB), %llu data chunks of up to %llu bytes\n",
           (unsigned long long)info.file_bytes, (double)info.file_bytes / 1048576.0,
           (unsigned long long)info.data_chunks, (unsigned long long)info.chunk_bytes);
    printf("fields\n");
    for (uint32_t f = 0; f < ss_field_count(s); f++) {
        ss_field d;
        char shape[128];
        ss_field_info(s, f, &d);
        ss_shape_text(&d, shape, sizeof shape);
        printf("  %-12s %-5s %-12s", d.name, ss_dtype_name(d.dtype), shape);
        ss_length_stats st;
        if (d.sequence && ss_field_stats(s, f, &st) == 0)
            printf(" length min %llu mean %.1f p50 %llu p95 %llu max %llu total %llu",
                   (unsigned long long)st.min, st.mean, (unsigned long long)st.p50,
                   (unsigned long long)st.p95, (unsigned long long)st.max,
                   (unsigned long long)st.total);
        else if (!d.sequence)
            printf(" one row per example");
        printf("\n");
    }
    printf("attributes  %llu\n", (unsigned long long)ss_attr_count(s));
    for (uint64_t k = 0; k < ss_attr_count(s); k++) {
        ss_attr a;
        if (ss_attr_at(s, k, &a) != 0) {
            printf("  (attribute %llu: %s)\n", (unsigned long long)k, ss_error_message());
            continue;
        }
        printf("  %-24s %-5s %8llu bytes", a.name, ss_cli_attr_type_name(a.type),
               (unsigned long long)a.size);
        ss_print_attr_value(&a);
        printf("\n");
    }
}

static void ss_info_usage(FILE *out) {
    fprintf(out, "usage: seqstore info STORE [--json] [--nolock] [--incomplete]\n\n"
                 "Print the examples, fields (dtype, shape), length statistics per field\n"
                 "(min, mean, p50, p95, max, total; from the index alone), file size,\n"
                 "attributes, format version and whether the store is complete.\n\n"
                 "  --json        one JSON object on stdout\n"
                 "  --nolock      open without a lock file (read-only media; no writer may run)\n"
                 "  --incomplete  show the committed part of an unfinished store\n");
}

int ss_cmd_info(int argc, char **argv) {
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
            return ss_cli_bad_option("info", c, argv);
    }
    if (optind != argc - 1) return ss_cli_usage_error("info", "expected one STORE");
    ss_store *s;
    if (ss_cli_open(&s, "info", argv[optind], flags)) return SS_EXIT_ERROR;
    if (json) {
        json_t *root = ss_info_json(s, argv[optind]);
        ss_json_print(root);
        json_decref(root);
    } else {
        ss_info_text(s, argv[optind]);
    }
    ss_close(s);
    return SS_EXIT_OK;
}
