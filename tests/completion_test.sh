# SPDX-License-Identifier: BSD-2-Clause
# completion_test.sh COMPLETION CLI - the bash completion offers commands, kinds and options.
set -e
source "$1"
PATH="$(dirname "$2"):$PATH"
comp() { COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); COMPREPLY=(); _seqstore; echo "${COMPREPLY[*]}"; }
[ "$(comp seqstore c)" = "convert cat" ] || { echo "commands: $(comp seqstore c)"; exit 1; }
[ "$(comp seqstore convert i)" = "idx" ] || { echo "kinds: $(comp seqstore convert i)"; exit 1; }
case " $(comp seqstore info --j) " in *" --json "*) ;; *) echo "options: $(comp seqstore info --j)"; exit 1;; esac
echo ok
