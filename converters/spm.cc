// SPDX-License-Identifier: BSD-2-Clause
// spm.cc - the C interface of spm.h over SentencePiece's C++ API. Nothing
// C++ escapes: every exception is caught and turned into an error message.
#include "spm.h"

#include <sentencepiece_processor.h>

#include <cstdio>
#include <new>
#include <string>
#include <vector>

struct ss_spm {
    sentencepiece::SentencePieceProcessor sp;
};

static void set_err(char *err, size_t errlen, const std::string &m) {
    if (errlen) std::snprintf(err, errlen, "%s", m.c_str());
}

int ss__spm_load(ss_spm **out, const char *path, char *err, size_t errlen) {
    *out = nullptr;
    try {
        ss_spm *m = new ss_spm;
        auto st = m->sp.Load(path);
        if (!st.ok()) {
            set_err(err, errlen, std::string("not a SentencePiece model: ") + st.ToString());
            delete m;
            return -1;
        }
        *out = m;
        return 0;
    } catch (const std::exception &e) {
        set_err(err, errlen, e.what());
    } catch (...) {
        set_err(err, errlen, "SentencePiece failed");
    }
    return -1;
}

void ss__spm_free(ss_spm *m) {
    delete m;
}

uint32_t ss__spm_vocab_size(const ss_spm *m) {
    return (uint32_t)m->sp.GetPieceSize();
}

int64_t ss__spm_special(const ss_spm *m, const char *which) {
    std::string w(which);
    if (w == "bos") return m->sp.bos_id();
    if (w == "eos") return m->sp.eos_id();
    if (w == "unk") return m->sp.unk_id();
    if (w == "pad") return m->sp.pad_id();
    if (w == "eod") {
        // Megatron appends "the end-of-document token": a model trained with
        // --user_defined_symbols=<eod> has one; otherwise it is eos.
        int id = m->sp.PieceToId("<eod>");
        if (id != m->sp.unk_id() || m->sp.IdToPiece(id) == "<eod>") return id;
        return m->sp.eos_id();
    }
    return -1;
}

const char *ss__spm_piece(const ss_spm *m, uint32_t id, size_t *len) {
    const std::string &p = m->sp.IdToPiece((int)id);
    *len = p.size();
    return p.data();
}

const int *ss__spm_encode(const ss_spm *m, const char *text, size_t len, size_t *n, char *err,
                          size_t errlen) {
    // One buffer per thread, reused: no allocation per example once warm.
    static thread_local std::vector<int> ids;
    *n = 0;
    try {
        auto st = m->sp.Encode(std::string_view(text, len), &ids);
        if (!st.ok()) {
            set_err(err, errlen, std::string("SentencePiece: ") + st.ToString());
            return nullptr;
        }
        static const int none = 0; // a valid pointer for an empty result
        *n = ids.size();
        return ids.empty() ? &none : ids.data();
    } catch (const std::exception &e) {
        set_err(err, errlen, std::string("SentencePiece: ") + e.what());
    } catch (...) {
        set_err(err, errlen, "SentencePiece failed");
    }
    return nullptr;
}
