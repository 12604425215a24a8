# The ABI check (CTest abi_compatible_with_last_release, tests/abi/abi.cmake):
# reads the ABI of this build's libmixp.so with abidw and compares it with
# the last release's, stored in tests/abi/baseline/, with abidiff and the
# suppressions of tests/abi/abi.suppr. Fails on every change they do not
# allow. Run with cmake -P:
#   -DABIDW= -DABIDIFF=   the libabigail tools
#   -DLIB=                the libmixp.so to check
#   -DHEADERS=            its public header folder (include/mixp)
#   -DBASELINE=           the stored ABI (baseline/libmixp-<version>.abi)
#   -DSUPPRESSIONS=       abi.suppr
#   -DOUT=                a folder for the dump of LIB (current.abi)
#   -DPYTHON=             python3, for check_layouts.py
#   -DSOURCE_DIR=         LIB's source folder, left out of the paths in the dump
# With -DDUMP_ONLY=FILE it only writes LIB's ABI to FILE, with the same
# abidw flags (tests/abi/make_baseline.sh uses that to store a release's).
#
# abidw reads the debug information of src/api/ (compiled with -g: the
# MIXP_API_DEBUG_INFO option) and keeps what the public header declares:
# the exported functions, the types they use, opaque handles as
# declarations. No source locations or paths, so dumps of two builds differ
# only where the ABI does.
set(abidw_flags --exported-interfaces-only --headers-dir ${HEADERS} --drop-private-types --no-show-locs
                --no-corpus-path --no-comp-dir-path --no-elf-needed)

# Writes LIB's ABI to `file`, with paths relative to SOURCE_DIR, so that it
# can be stored in the repository as it is.
function(dump_abi file)
  execute_process(COMMAND ${ABIDW} ${abidw_flags} --out-file ${file} ${LIB} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "abidw failed (${rc}) on ${LIB}")
  endif()
  if(DEFINED SOURCE_DIR)
    file(READ ${file} dump)
    string(REPLACE "'${SOURCE_DIR}/" "'" dump "${dump}")
    file(WRITE ${file} "${dump}")
  endif()
endfunction()

if(DEFINED DUMP_ONLY)
  dump_abi(${DUMP_ONLY})
  return()
endif()

# The premise of the suppression that lets a struct grow at its end: every
# struct the header defines begins with uint32_t struct_size.
file(READ ${HEADERS}/mixp.h header)
# (Up to the first ";", which would split the CMake list.)
string(REGEX MATCHALL "typedef struct [a-z0-9_]+ {\n[^\n;]*" defs "${header}")
list(LENGTH defs n_structs)
if(n_structs LESS 10)
  message(FATAL_ERROR "found only ${n_structs} struct definitions in ${HEADERS}/mixp.h")
endif()
foreach(def IN LISTS defs)
  if(NOT def MATCHES "\n  uint32_t struct_size$")
    string(REGEX MATCH "typedef struct [a-z0-9_]+" name "${def}")
    message(FATAL_ERROR "${name} does not begin with uint32_t struct_size: it could not grow compatibly, "
                        "and abi.suppr's rule for structs that grow at their end would not hold for it")
  endif()
endforeach()

file(MAKE_DIRECTORY ${OUT})
set(current ${OUT}/current.abi)
dump_abi(${current})
file(READ ${current} dump)
string(REGEX MATCHALL "<function-decl name='mixp_" fns "${dump}")
list(LENGTH fns n_fns)
if(n_fns LESS 50)
  message(FATAL_ERROR "abidw found only ${n_fns} mixp_ functions with debug information in ${LIB}: "
                      "is src/api/ compiled with -g (MIXP_API_DEBUG_INFO)?")
endif()

# What the suppression of growing structs would hide: a member of a struct
# changed, moved or removed, an enumerator changed or removed
# (check_layouts.py compares the two dumps itself).
get_filename_component(here ${CMAKE_CURRENT_LIST_FILE} DIRECTORY)
execute_process(COMMAND ${PYTHON} ${here}/check_layouts.py ${BASELINE} ${current}
  OUTPUT_VARIABLE layouts ERROR_VARIABLE layouts RESULT_VARIABLE layouts_rc)
message("${layouts}")

# abidiff's exit status is a bit field: 1 error, 2 usage error, 4 an ABI
# change, 8 an incompatible change. Any of them fails the check; added
# functions and harmless changes (appended enumerators) set none.
execute_process(COMMAND ${ABIDIFF} --suppressions ${SUPPRESSIONS} --no-unreferenced-symbols ${BASELINE} ${current}
  OUTPUT_VARIABLE report ERROR_VARIABLE report RESULT_VARIABLE rc)
get_filename_component(baseline_name ${BASELINE} NAME)
message("abidiff ${baseline_name} current.abi (${n_fns} functions):\n${report}")
if(NOT layouts_rc EQUAL 0)
  message(FATAL_ERROR "check_layouts.py: a struct or enum of ${BASELINE} changed incompatibly (above). If the change "
                      "is intended, docs/embedding.md (\"Checking the ABI\") says how to bless it.")
endif()
if(NOT rc EQUAL 0)
  set(why "")
  if(rc GREATER_EQUAL 0 AND rc LESS 16)
    math(EXPR bit1 "${rc} & 1")
    math(EXPR bit2 "${rc} & 2")
    math(EXPR bit4 "${rc} & 4")
    math(EXPR bit8 "${rc} & 8")
    if(bit1)
      string(APPEND why " abidiff failed;")
    endif()
    if(bit2)
      string(APPEND why " usage error;")
    endif()
    if(bit4)
      string(APPEND why " the ABI changed in a way abi.suppr does not allow;")
    endif()
    if(bit8)
      string(APPEND why " the change is incompatible (a removed function or a changed type);")
    endif()
  endif()
  message(FATAL_ERROR "abidiff exit status ${rc}:${why} see the report above. If the change is intended, "
                      "docs/embedding.md (\"Checking the ABI\") says how to bless it.")
endif()
message(STATUS "ABI compatible with ${baseline_name}")
