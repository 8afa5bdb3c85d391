# SPDX-License-Identifier: BSD-2-Clause
# gen_man.cmake - write man pages for seqstore(1) and each of its commands from
# their --help output with help2man. The command list is read from
# `seqstore --help` itself, so a new command gets its page without an edit here.
# Arguments (-D): CLI (the seqstore executable), HELP2MAN, OUT_DIR, VERSION.
foreach(var CLI HELP2MAN OUT_DIR VERSION)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "gen_man.cmake: -D${var}=... is required")
  endif()
endforeach()
file(MAKE_DIRECTORY ${OUT_DIR})
execute_process(COMMAND ${CLI} --help OUTPUT_VARIABLE help RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${CLI} --help failed (${rc})")
endif()

function(page prog name file title)
  execute_process(COMMAND ${HELP2MAN} --no-info --no-discard-stderr --section=1
                          --version-string=${VERSION} --name=${name} ${prog}
                  OUTPUT_VARIABLE man RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "help2man failed for '${prog}' (${rc})")
  endif()
  # help2man titles a page after the program's first word; a command's page is
  # seqstore-COMMAND(1), as git and other multi-command tools name theirs.
  string(REGEX REPLACE "\n\\.TH [^\n]*\n" "\n.TH ${title} \"1\" \"\" \"seqstore ${VERSION}\" \"User Commands\"\n" man "${man}")
  file(WRITE ${OUT_DIR}/${file} "${man}")
endfunction()

# seqstore-convert(1) also carries each kind's own options: the text of
# `seqstore convert KIND --help` for every kind `convert --help` lists.
execute_process(COMMAND ${CLI} convert --help OUTPUT_VARIABLE convert_help RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${CLI} convert --help failed (${rc})")
endif()
string(REGEX MATCH "kinds:\n(.*)\n\n" block "${convert_help}")
string(REPLACE "\n" ";" lines "${CMAKE_MATCH_1}")
set(kinds_text ".SH \"CONVERTERS\"\nEach kind's own options, as 'seqstore convert KIND --help' prints them\n(with the common options above).\n")
foreach(line IN LISTS lines)
  if(line MATCHES "^  ([a-z]+) ")
    set(kind ${CMAKE_MATCH_1})
    execute_process(COMMAND ${CLI} convert ${kind} --help OUTPUT_VARIABLE khelp RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "${CLI} convert ${kind} --help failed (${rc})")
    endif()
    # the common options are on the page once, above
    string(REGEX REPLACE "\ncommon options:\n.*$" "\n" khelp "${khelp}")
    # roff: a backslash is \e, a line starting with '.' or ' is protected by \&
    string(REPLACE "\\" "\\e" khelp "${khelp}")
    string(REGEX REPLACE "(^|\n)([.'])" "\\1\\\\&\\2" khelp "${khelp}")
    string(APPEND kinds_text ".SS \"seqstore convert ${kind}\"\n.nf\n${khelp}.fi\n")
  endif()
endforeach()

set(see_also "")
string(REGEX MATCH "commands:\n(.*)\n\n" block "${help}")
string(REPLACE "\n" ";" lines "${CMAKE_MATCH_1}")
foreach(line IN LISTS lines)
  if(line MATCHES "^  ([a-z]+) +(.*)$")
    set(cmd ${CMAKE_MATCH_1})
    string(TOUPPER "SEQSTORE-${cmd}" title)
    page("${CLI} ${cmd}" "${CMAKE_MATCH_2}" seqstore-${cmd}.1 ${title})
    if(cmd STREQUAL "convert")
      file(APPEND ${OUT_DIR}/seqstore-convert.1 "${kinds_text}")
    endif()
    file(APPEND ${OUT_DIR}/seqstore-${cmd}.1 ".SH \"SEE ALSO\"\n.BR seqstore (1)\n")
    string(APPEND see_also ".BR seqstore-${cmd} (1)\n")
  endif()
endforeach()

if(see_also STREQUAL "")
  message(FATAL_ERROR "no commands found in `seqstore --help`")
endif()
page(${CLI} "store sequential machine-learning data in a memory-mapped LMDB file" seqstore.1 SEQSTORE)
file(APPEND ${OUT_DIR}/seqstore.1 ".SH \"SEE ALSO\"\n${see_also}")
