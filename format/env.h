/* env.h - the per-process registry of LMDB environments (internal). */
#ifndef SS_ENV_H
#define SS_ENV_H

#include "internal.h"

#include <lmdb.h>

/* Opens a new environment into *env (left for the registry to close on error). */
typedef int (*ss_env_open_fn)(MDB_env **env, void *ctx);

/* The environment of `path`: shared with this process's other readers, or
 * opened with `open_fn`. SS_EBUSY when a writer meets any other user. */
int ss_env_acquire(MDB_env **out, const char *path, int writer, ss_env_open_fn open_fn, void *ctx);
/* Drop one reference; the last closes the environment. Accepts NULL. */
void ss_env_release(MDB_env *env);
/* SS_ECORRUPT when the file is shorter than the pages the meta page claims. */
int ss_env_check_size(MDB_env *env, const char *path);

#endif
