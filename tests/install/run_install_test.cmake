# SPDX-License-Identifier: BSD-2-Clause
# run_install_test.cmake - install the built tree into a temporary prefix and
# build tests/install/consumer.c against it, with find_package(seqstore) and
# with `pkg-config --cflags --libs seqstore`; run every program.
# Then a C++-only project (tests/install/cxx) finds the installed package, and
# a project that builds seqstore as its subproject (tests/install/subproject)
# gets the libraries and no other target.
# Arguments (-D): BUILD_DIR, SOURCE_DIR (tests/install), WORK_DIR, C_COMPILER,
# CXX_COMPILER (empty: no C++ consumer), SANITIZE (ON when the tree is built
# with sanitizers), LAUNCHER (a compiler launcher such as ccache, or empty).
foreach(var BUILD_DIR SOURCE_DIR WORK_DIR C_COMPILER)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "run_install_test.cmake: -D${var}=... is required")
  endif()
endforeach()

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    string(REPLACE ";" " " cmd "${ARGN}")
    message(FATAL_ERROR "failed (${rc}): ${cmd}\n${out}\n${err}")
  endif()
  set(last_output "${out}" PARENT_SCOPE)
endfunction()

set(prefix ${WORK_DIR}/prefix)
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
foreach(f include/seqstore.h share/bash-completion/completions/seqstore share/doc/seqstore/LICENSE)
  if(NOT EXISTS ${prefix}/${f})
    message(FATAL_ERROR "not installed: ${f}")
  endif()
endforeach()

# Man pages: seqstore(1) and one page per command, readable by man(1).
if(HAVE_MAN_PAGES)
  file(GLOB pages ${prefix}/share/man/man1/seqstore*.1)
  list(LENGTH pages npages)
  if(npages LESS 8)
    message(FATAL_ERROR "expected seqstore.1 and a page per command, found: ${pages}")
  endif()
  find_program(MAN man)
  if(MAN)
    foreach(page seqstore seqstore-convert)
      run(${CMAKE_COMMAND} -E env MANPATH=${prefix}/share/man MANPAGER=cat MANWIDTH=80 ${MAN} ${page})
      if(NOT last_output MATCHES "seqstore" OR NOT last_output MATCHES "DESCRIPTION")
        message(FATAL_ERROR "man ${page} printed:\n${last_output}")
      endif()
    endforeach()
    # seqstore-convert(1) has every kind and each kind's own options
    foreach(kind lines text jsonl parallel megatron edf biosig idx npy audio)
      if(NOT last_output MATCHES "seqstore convert ${kind}\n")
        message(FATAL_ERROR "man seqstore-convert has no section for '${kind}':\n${last_output}")
      endif()
    endforeach()
    if(NOT last_output MATCHES "--tokenizer" OR NOT last_output MATCHES "--resample")
      message(FATAL_ERROR "man seqstore-convert lacks the kinds' options:\n${last_output}")
    endif()
    message(STATUS "man seqstore, man seqstore-convert: ok (${npages} pages)")
  endif()
endif()

# bash-completion's loader finds the installed completion in the prefix
# (XDG_DATA_DIRS, as /usr/local/share is by default), where installed.
set(bash_completion /usr/share/bash-completion/bash_completion)
if(EXISTS ${bash_completion})
  file(WRITE ${WORK_DIR}/completion.sh
       "source ${bash_completion}\n_completion_loader seqstore\ncomplete -p seqstore\n")
  run(${CMAKE_COMMAND} -E env XDG_DATA_DIRS=${prefix}/share bash ${WORK_DIR}/completion.sh)
  if(NOT last_output MATCHES "-F _seqstore")
    message(FATAL_ERROR "bash-completion does not load the installed completion:\n${last_output}")
  endif()
  message(STATUS "bash-completion loads ${prefix}/share/bash-completion/completions/seqstore")
else()
  message(STATUS "bash-completion not installed: loading not tried (apt-get install bash-completion)")
endif()

set(flags "")
if(SANITIZE)
  set(flags "-fsanitize=address,undefined")
endif()

# 1. CMake: find_package(seqstore) with the shared and the static library
run(${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK_DIR}/cmake-build -DCMAKE_PREFIX_PATH=${prefix}
    -DCMAKE_C_COMPILER=${C_COMPILER} "-DCMAKE_C_FLAGS=${flags}" -DCMAKE_BUILD_TYPE=Release)
run(${CMAKE_COMMAND} --build ${WORK_DIR}/cmake-build)
foreach(exe consumer_shared consumer_static)
  run(${WORK_DIR}/cmake-build/${exe} ${WORK_DIR}/${exe}.ss)
  message(STATUS "${exe}: ${last_output}")
endforeach()

# 1b. CMake from a C++-only project: project(x LANGUAGES CXX), no C compiler
if(CXX_COMPILER)
  run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/cxx -B ${WORK_DIR}/cxx-build -DCMAKE_PREFIX_PATH=${prefix}
      -DCMAKE_CXX_COMPILER=${CXX_COMPILER} "-DCMAKE_CXX_FLAGS=${flags}" -DCMAKE_BUILD_TYPE=Release)
  run(${CMAKE_COMMAND} --build ${WORK_DIR}/cxx-build)
  foreach(exe consumer_cxx_shared consumer_cxx_static)
    run(${WORK_DIR}/cxx-build/${exe} ${WORK_DIR}/${exe}.ss)
    message(STATUS "${exe}: ${last_output}")
  endforeach()
else()
  message(STATUS "no C++ compiler: C++-only consumer not tried")
endif()

# 1c. seqstore as a subproject (add_subdirectory, as FetchContent does): the
# consumer's CMakeLists fails unless seqstore adds only its two libraries.
get_filename_component(seqstore_source ${SOURCE_DIR}/../.. ABSOLUTE)
set(launch "")
if(LAUNCHER)
  set(launch -DCMAKE_C_COMPILER_LAUNCHER=${LAUNCHER})
endif()
run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/subproject -B ${WORK_DIR}/sub-build
    -DSEQSTORE_SOURCE_DIR=${seqstore_source} -DCMAKE_C_COMPILER=${C_COMPILER}
    "-DCMAKE_C_FLAGS=${flags}" -DCMAKE_BUILD_TYPE=Release ${launch})
string(REGEX MATCH "seqstore as a subproject adds [^\n]*" added "${last_output}")
message(STATUS "${added}")
run(${CMAKE_COMMAND} --build ${WORK_DIR}/sub-build --target consumer_sub)
run(${WORK_DIR}/sub-build/consumer_sub ${WORK_DIR}/consumer_sub.ss)
message(STATUS "consumer_sub: ${last_output}")

# 2. pkg-config, as a Makefile user would: cc prog.c $(pkg-config --cflags --libs seqstore)
find_program(PKG_CONFIG pkg-config REQUIRED)
file(GLOB_RECURSE pc_files ${prefix}/*/seqstore.pc)
list(LENGTH pc_files n)
if(NOT n EQUAL 1)
  message(FATAL_ERROR "expected one installed seqstore.pc, found: ${pc_files}")
endif()
get_filename_component(pc_dir ${pc_files} DIRECTORY)
get_filename_component(libdir ${pc_dir} DIRECTORY)
set(ENV{PKG_CONFIG_PATH} ${pc_dir})
run(${PKG_CONFIG} --cflags --libs seqstore)
string(STRIP "${last_output}" pc_flags)
message(STATUS "pkg-config --cflags --libs seqstore: ${pc_flags}")
separate_arguments(pc_list UNIX_COMMAND "${pc_flags}")
separate_arguments(flag_list UNIX_COMMAND "${flags}")
run(${C_COMPILER} ${flag_list} ${SOURCE_DIR}/consumer.c -o ${WORK_DIR}/consumer_pc ${pc_list})
run(${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${libdir} ${WORK_DIR}/consumer_pc
    ${WORK_DIR}/consumer_pc.ss)
message(STATUS "consumer_pc: ${last_output}")

# 3. The ABI policy README states: before 1.0 the SONAME carries MAJOR.MINOR.
file(GLOB sonames ${libdir}/libseqstore.so.*)
find_program(READELF readelf REQUIRED)
run(${READELF} -d ${libdir}/libseqstore.so)
if(NOT last_output MATCHES "Library soname: \\[libseqstore\\.so\\.([0-9.]+)\\]")
  message(FATAL_ERROR "no SONAME in libseqstore.so:\n${last_output}")
endif()
set(soname_version ${CMAKE_MATCH_1})
if(NOT soname_version MATCHES "^0\\.[0-9]+$" AND NOT soname_version MATCHES "^[1-9][0-9]*$")
  message(FATAL_ERROR "SONAME version ${soname_version}: expected 0.MINOR before 1.0, MAJOR after")
endif()
message(STATUS "SONAME libseqstore.so.${soname_version}")

# 4. The public headers are C11 as README says: clean under -std=c11 -Wpedantic.
file(WRITE ${WORK_DIR}/c11.c "#include <seqstore.h>\nint main(void) { return 0; }\n")
run(${C_COMPILER} -std=c11 -Wall -Wextra -Wpedantic -Werror -I${prefix}/include -c ${WORK_DIR}/c11.c
    -o ${WORK_DIR}/c11.o)
message(STATUS "seqstore.h: clean under -std=c11 -Wpedantic")
file(REMOVE_RECURSE ${WORK_DIR})
