/* SPDX-License-Identifier: BSD-2-Clause */
/* text_input.c - the text engine: inputs read whole, mapped or gunzipped (see text.h). */
#include "internal.h"
#include "internal.h"
#include "memlimit.h"
#include "spm_text.h"
#include "text.h"
#include "text_impl.h"
#include "utf8.h"
#include "words.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

/* ----------------------------------------------------------------- inputs */

static int read_fd_all(tx_input *in, int fd, char *err, size_t errlen) {
    size_t cap = 0, n = 0;
    uint8_t *buf = NULL;
    for (;;) {
        if (ss__tx_reserve(&buf, &cap, n + 65536)) {
            free(buf);
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            snprintf(err, errlen, "read error: %s", strerror(errno));
            free(buf);
            return -1;
        }
        if (r == 0) break;
        n += (size_t)r;
    }
    in->owned = buf;
    in->data = buf;
    in->size = n;
    return 0;
}

/* Read the file `path` as it is: mapped when it is a regular file, else
 * read to its end (a pipe, a device). */
static int load_plain(tx_input *in, const char *path, char *err, size_t errlen) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "cannot open: %s", strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        snprintf(err, errlen, "cannot stat: %s", strerror(errno));
        close(fd);
        return -1;
    }
    if (S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "is a directory");
        close(fd);
        return -1;
    }
    int rc = 0;
    if (S_ISREG(st.st_mode) && st.st_size > 0) {
        void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m != MAP_FAILED) {
            madvise(m, (size_t)st.st_size, MADV_SEQUENTIAL);
            in->map = m;
            in->map_len = (size_t)st.st_size;
            in->data = m;
            in->size = (size_t)st.st_size;
        } else {
            rc = read_fd_all(in, fd, err, errlen);
        }
    } else if (!S_ISREG(st.st_mode)) {
        rc = read_fd_all(in, fd, err, errlen);
    }
    close(fd);
    return rc;
}

/* Where member `*members` of gzip data d[0, n) ended at d[pos]: 0 when the
 * data ends there (nothing, or only the zero bytes that pad a file, which
 * gzip accepts too), 1 when another member starts there, else -1 with the
 * message (what `gzip -t` calls trailing garbage). */
static int gz_after_member(const uint8_t *d, size_t n, size_t pos, int members, char *err,
                           size_t errlen) {
    if (n - pos >= 2 && d[pos] == 0x1f && d[pos + 1] == 0x8b) return 1;
    size_t k = pos;
    while (k < n && d[k] == 0) k++;
    if (k == n) return 0;
    snprintf(err, errlen, "not gzip: %zu bytes after the end of gzip member %d (at byte %zu)",
             n - pos, members, pos);
    return -1;
}

/* Decompress the gzip data d[0, n) into *buf (cap *cap), *out bytes, as
 * `gzip -d` reads a file: one member or more, then nothing but zero bytes.
 * 0, or -1 with the message in err. */
static int gunzip(const uint8_t *d, size_t n, uint8_t **buf, size_t *cap, size_t *out, char *err,
                  size_t errlen) {
    if (n == 0) return snprintf(err, errlen, "not gzip: the file is empty"), -1;
    if (n < 2 || d[0] != 0x1f || d[1] != 0x8b)
        return snprintf(err, errlen, "not gzip: it does not start with the gzip magic bytes 1f 8b"),
               -1;
    z_stream z;
    memset(&z, 0, sizeof z);
    if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK)
        return snprintf(err, errlen, "out of memory"), -1;
    size_t pos = 0, m = 0; /* input consumed, output produced */
    int members = 0, rc = -1;
    for (;;) {
        if (*cap - m < (1u << 20) && ss__tx_reserve(buf, cap, m + (1u << 20))) {
            snprintf(err, errlen, "out of memory");
            break;
        }
        size_t room = *cap - m, left = n - pos;
        z.next_in = (Bytef *)(uintptr_t)(d + pos); /* zlib does not write the input */
        z.avail_in = (uInt)(left < (1u << 30) ? left : (1u << 30));
        z.next_out = *buf + m;
        z.avail_out = (uInt)(room < (1u << 30) ? room : (1u << 30));
        int r = inflate(&z, Z_NO_FLUSH);
        pos = (size_t)(z.next_in - d);
        m = (size_t)(z.next_out - *buf);
        if (r == Z_STREAM_END) {
            int next = gz_after_member(d, n, pos, ++members, err, errlen);
            if (next <= 0) {
                rc = next;
                break;
            }
            inflateReset(&z);
        } else if (r == Z_BUF_ERROR && pos == n) {
            snprintf(err, errlen, "gzip error after %zu decompressed bytes: unexpected end of file",
                     m);
            break;
        } else if (r != Z_OK && r != Z_BUF_ERROR) {
            snprintf(err, errlen, "gzip error after %zu decompressed bytes: %s", m,
                     r == Z_MEM_ERROR ? "out of memory" : z.msg ? z.msg : "invalid data");
            break;
        }
    }
    inflateEnd(&z);
    *out = m;
    return rc;
}

static int read_gz(tx_input *in, const char *path, char *err, size_t errlen) {
    tx_input raw;
    memset(&raw, 0, sizeof raw);
    if (load_plain(&raw, path, err, errlen)) return -1;
    uint8_t *buf = NULL;
    size_t cap = 0, n = 0;
    int rc = gunzip(raw.data, raw.size, &buf, &cap, &n, err, errlen);
    ss__tx_input_release(&raw);
    if (rc) {
        free(buf);
        return -1;
    }
    in->owned = buf;
    in->data = buf;
    in->size = n;
    return 0;
}

int ss__tx_input_load(tx_input *in, const char *path, char *err, size_t errlen) {
    memset(in, 0, sizeof *in);
    in->path = path;
    if (!strcmp(path, "-")) return read_fd_all(in, 0, err, errlen);
    size_t pl = strlen(path);
    if (pl > 3 && !strcmp(path + pl - 3, ".gz")) return read_gz(in, path, err, errlen);
    return load_plain(in, path, err, errlen);
}

void ss__tx_input_release(tx_input *in) {
    if (in->map) munmap(in->map, in->map_len);
    free(in->owned);
    in->map = NULL;
    in->owned = NULL;
    in->data = NULL;
}

