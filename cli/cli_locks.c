/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cli_locks.c - the lock files a command leaves: none it created.
 */
#include "commands.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------ lock files
 *
 * LMDB keeps its reader table in STORE-lock, which it creates when a store is
 * opened with a lock (even read-only, even when the file then turns out not
 * to be a store). The table must be shared by every process that has the
 * store open: a writer reuses the pages no reader listed there still reads.
 * So a lock file is removed only when it is certainly unused:
 *   - only lock files this command created (absent when it first named the
 *     store): one that was there belongs, or may belong, to another process;
 *   - at the end of the command, after every store of this process is closed;
 *   - only while holding an exclusive fcntl lock on its byte 0: every LMDB
 *     environment holds a shared lock there for as long as it is open, so the
 *     exclusive lock is granted only when no process has the store open; the
 *     file is unlinked before that lock is released.
 * What remains: a process that opened the lock file in the microseconds
 * between that lock and the unlink keeps using the removed file. Readers on
 * read-only media, or that must never create a file, use --nolock. */

#define SS_CLI_MAX_PATHS 8

static struct {
    char *lock; /* STORE-lock, absent when the command first named STORE */
} ss_cli_paths[SS_CLI_MAX_PATHS];

void ss__cli_note_store(const char *path, unsigned flags) {
    if (flags & SS_OPEN_NOLOCK) return;
    size_t n = strlen(path);
    char *lock = malloc(n + 6);
    if (!lock) return;
    memcpy(lock, path, n);
    memcpy(lock + n, "-lock", 6);
    int free_slot = -1;
    for (int i = 0; i < SS_CLI_MAX_PATHS; i++) {
        if (ss_cli_paths[i].lock && strcmp(ss_cli_paths[i].lock, lock) == 0) {
            free(lock); /* first naming decides */
            return;
        }
        if (!ss_cli_paths[i].lock && free_slot < 0) free_slot = i;
    }
    if (free_slot < 0 || access(lock, F_OK) == 0) {
        free(lock);
        return;
    }
    ss_cli_paths[free_slot].lock = lock;
}

void ss__cli_note_leftover(const char *path) {
    size_t n = strlen(path);
    int free_slot = -1;
    for (int i = 0; i < SS_CLI_MAX_PATHS; i++) {
        const char *lock = ss_cli_paths[i].lock;
        if (lock && strlen(lock) == n + 5 && !strncmp(lock, path, n)) return;
        if (!lock && free_slot < 0) free_slot = i;
    }
    char *lock = malloc(n + 6);
    if (!lock || free_slot < 0) {
        free(lock);
        return;
    }
    memcpy(lock, path, n);
    memcpy(lock + n, "-lock", 6);
    ss_cli_paths[free_slot].lock = lock;
}

/* Remove the lock files this process created, if no process uses them. */
void ss__cli_drop_locks(void) {
    for (int i = 0; i < SS_CLI_MAX_PATHS; i++) {
        char *lock = ss_cli_paths[i].lock;
        if (!lock) continue;
        int fd = open(lock, O_RDWR | O_CLOEXEC);
        if (fd >= 0) {
            struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1};
            if (fcntl(fd, F_SETLK, &fl) == 0) unlink(lock);
            close(fd);
        }
        free(lock);
        ss_cli_paths[i].lock = NULL;
    }
}
