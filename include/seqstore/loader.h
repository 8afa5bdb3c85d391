/* seqstore/loader.h - part of the public API; include <seqstore.h>, not this file. */
#ifndef SEQSTORE_LOADER_H
#define SEQSTORE_LOADER_H

#include "../seqstore.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifdef __cplusplus
}
#endif

#endif /* SEQSTORE_LOADER_H */
