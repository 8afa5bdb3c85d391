# SPDX-License-Identifier: BSD-2-Clause
# completion_test.sh COMPLETION CLI - the bash completion offers commands,
# convert's kinds and each kind's own options, subcommands and options.
set -e
source "$1"
PATH="$(dirname "$2"):$PATH"
comp() { COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); COMPREPLY=(); _seqstore; echo "${COMPREPLY[*]}"; }
fail() { echo "$1: got '$2'"; exit 1; }
has() { case " $2 " in *" $3 "*) ;; *) fail "$1 (no $3)" "$2" ;; esac; }
[ "$(comp seqstore c)" = "convert cat" ] || fail commands "$(comp seqstore c)"
[ "$(comp seqstore convert i)" = "idx" ] || fail kinds "$(comp seqstore convert i)"
kinds=$(comp seqstore convert '')
for k in lines text jsonl megatron parallel edf idx npy biosig audio; do has "kinds" "$kinds" $k; done
has options "$(comp seqstore info --j)" --json
# a kind's own options, and the common ones
to=$(comp seqstore convert text --to)
has "convert text --to" "$to" --tokens
has "convert text --to" "$to" --tokenizer
has "convert audio --re" "$(comp seqstore convert audio in.wav --re)" --resample
has "convert text --fo" "$(comp seqstore convert text --fo)" --force
# subcommands
[ "$(comp seqstore split '')" = "add kfold list rm show" ] || fail "split subcommands" "$(comp seqstore split '')"
[ "$(comp seqstore split k)" = "kfold" ] || fail "split k" "$(comp seqstore split k)"
[ "$(comp seqstore attr '')" = "get list rm set" ] || fail "attr subcommands" "$(comp seqstore attr '')"
has "index subcommands" "$(comp seqstore index '')" list
has "index subcommands" "$(comp seqstore index '')" rm
[ "$(comp seqstore dataset '')" = "build pull push" ] || fail "dataset subcommands" "$(comp seqstore dataset '')"
has "export subcommands" "$(comp seqstore export '')" megatron
has "split add options" "$(comp seqstore split add --f)" --force
echo ok
