# SPDX-License-Identifier: BSD-2-Clause
# bash completion for seqstore(1). Commands, subcommands, convert's kinds and
# options are read from the program's own --help, so they never drift from
# what it accepts.
_seqstore_options() { # options named in the --help of: seqstore ARGS...
    "$prog" "$@" --help 2>/dev/null | grep -o -- '--[a-z][a-z0-9-]*' | sort -u
}
_seqstore() {
    local cur=${COMP_WORDS[COMP_CWORD]} prog=${COMP_WORDS[0]} cmd="" ci=0 i
    for ((i = 1; i < COMP_CWORD; i++)); do
        case ${COMP_WORDS[i]} in -*) ;; *) cmd=${COMP_WORDS[i]}; ci=$i; break ;; esac
    done
    if [ -z "$cmd" ]; then
        if [[ $cur == -* ]]; then
            COMPREPLY=($(compgen -W "--help --version" -- "$cur"))
        else
            local cmds
            cmds=$("$prog" --help 2>/dev/null | sed -n '/^commands:/,/^$/s/^  \([a-z][a-z]*\) .*/\1/p')
            COMPREPLY=($(compgen -W "$cmds" -- "$cur"))
        fi
        return
    fi
    if [ "$cmd" = convert ]; then
        local kind=""
        [ $((ci + 1)) -lt "$COMP_CWORD" ] && kind=${COMP_WORDS[ci + 1]}
        if [[ $cur == -* ]]; then # the kind's own options and the common ones
            COMPREPLY=($(compgen -W "$(_seqstore_options convert $kind) $(_seqstore_options convert)" -- "$cur"))
        elif [ -z "$kind" ]; then
            local kinds
            kinds=$("$prog" convert --help 2>/dev/null | sed -n '/^kinds:/,/^$/s/^  \([a-z][a-z]*\) .*/\1/p')
            COMPREPLY=($(compgen -W "$kinds" -- "$cur"))
        else
            COMPREPLY=($(compgen -f -- "$cur"))
        fi
        return
    fi
    # Subcommands: the lowercase word after "seqstore CMD" in CMD's usage
    # lines (split add, index list, ...); where a usage line takes a STORE
    # there instead (index STORE, export STORE), files are offered too.
    local usage subs=""
    usage=$("$prog" "$cmd" --help 2>/dev/null | sed -n "s/^\(usage:\)\{0,1\} *seqstore $cmd \([^ ]*\).*/\2/p")
    for i in $usage; do [[ $i == [a-z]* ]] && subs="$subs $i"; done
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$(_seqstore_options "$cmd")" -- "$cur"))
    elif [ -n "$subs" ] && [ $((ci + 1)) -eq "$COMP_CWORD" ]; then
        COMPREPLY=($(compgen -W "$(printf '%s\n' $subs | sort -u)" -- "$cur"))
        if [ "$(printf '%s\n' $usage | grep -c '^[A-Z]')" -gt 0 ]; then
            COMPREPLY+=($(compgen -f -- "$cur"))
        fi
    else
        COMPREPLY=($(compgen -f -- "$cur"))
    fi
}
complete -o filenames -F _seqstore seqstore
