# SPDX-License-Identifier: BSD-2-Clause
# bash completion for seqstore(1). Commands and options are read from the
# program's own --help, so they never drift from what it accepts.
_seqstore() {
    local cur=${COMP_WORDS[COMP_CWORD]} prog=${COMP_WORDS[0]} cmd="" i
    for ((i = 1; i < COMP_CWORD; i++)); do
        case ${COMP_WORDS[i]} in -*) ;; *) cmd=${COMP_WORDS[i]}; break ;; esac
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
    if [[ $cur == -* ]]; then
        local opts
        opts=$("$prog" "$cmd" --help 2>/dev/null | grep -o -- '--[a-z][a-z-]*' | sort -u)
        COMPREPLY=($(compgen -W "$opts" -- "$cur"))
        return
    fi
    if [ "$cmd" = convert ] && [ "$i" -eq $((COMP_CWORD - 1)) ]; then
        local kinds
        kinds=$("$prog" convert --help 2>/dev/null | sed -n '/^kinds:/,/^$/s/^  \([a-z][a-z]*\) .*/\1/p')
        COMPREPLY=($(compgen -W "$kinds" -- "$cur"))
        return
    fi
    COMPREPLY=($(compgen -f -- "$cur"))
}
complete -o filenames -F _seqstore seqstore
