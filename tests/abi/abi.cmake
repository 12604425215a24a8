# The ABI promise of mixp.h, checked two ways (included from
# tests/CMakeLists.txt; docs/embedding.md, "ABI and versioning policy"):
#
#   abi_compatible_with_last_release  libabigail's abidiff between the stored
#       ABI of the last release (baseline/libmixp-<version>.abi) and this
#       build's libmixp.so: fails on any change its suppressions
#       (abi.suppr) do not allow -- a removed or changed function -- and on
#       a struct changed other than by fields appended at its end or a
#       changed enum value (check_layouts.py, which abi.suppr cannot express).
#   abi_old_header_host_0_2  a program compiled against the frozen 0.2.0
#       header (old/mixp-0.2.0.h) trains, saves and loads with this library,
#       with guard bytes after every options struct.

# ---- abidiff against the last release -----------------------------------------------
file(GLOB MIXP_ABI_BASELINES ${CMAKE_CURRENT_LIST_DIR}/baseline/libmixp-*.abi)
list(LENGTH MIXP_ABI_BASELINES mixp_n_baselines)
find_program(MIXP_ABIDW abidw)
find_program(MIXP_ABIDIFF abidiff)
if(NOT mixp_n_baselines EQUAL 1)
  add_test(NAME abi_compatible_with_last_release
    COMMAND sh -c "echo 'tests/abi/baseline/ must hold exactly one libmixp-<version>.abi, the last release ABI (found ${mixp_n_baselines})'; exit 1")
elseif(NOT MIXP_API_DEBUG_INFO)
  add_test(NAME abi_compatible_with_last_release
    COMMAND sh -c "echo 'SKIP: MIXP_API_DEBUG_INFO=OFF: libmixp.so has no debug information to read its ABI from'; exit 77")
  set_tests_properties(abi_compatible_with_last_release PROPERTIES SKIP_RETURN_CODE 77)
elseif(NOT MIXP_ABIDW OR NOT MIXP_ABIDIFF)
  add_test(NAME abi_compatible_with_last_release
    COMMAND sh -c "echo 'SKIP: abidw/abidiff not found (apt-get install abigail-tools)'; exit 77")
  set_tests_properties(abi_compatible_with_last_release PROPERTIES SKIP_RETURN_CODE 77)
else()
  add_test(NAME abi_compatible_with_last_release
    COMMAND ${CMAKE_COMMAND} -DABIDW=${MIXP_ABIDW} -DABIDIFF=${MIXP_ABIDIFF} -DLIB=$<TARGET_FILE:mixp>
            -DHEADERS=${PROJECT_SOURCE_DIR}/include/mixp -DBASELINE=${MIXP_ABI_BASELINES}
            -DSUPPRESSIONS=${CMAKE_CURRENT_LIST_DIR}/abi.suppr -DOUT=${CMAKE_CURRENT_BINARY_DIR}/abi
            -DPYTHON=/usr/bin/python3 -DSOURCE_DIR=${PROJECT_SOURCE_DIR} -P ${CMAKE_CURRENT_LIST_DIR}/check_abi.cmake)
  set_tests_properties(abi_compatible_with_last_release PROPERTIES TIMEOUT 300)
endif()
add_test(NAME abi_check_layouts_self_test
  COMMAND /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/check_layouts.py --self-test)

# ---- a program built against 0.2.0's header -------------------------------------------
# Compiled with the frozen header only (the target links the library file,
# not the mixp target, so that the current include directory is not on its
# path).
add_executable(abi_old_header_host ${CMAKE_CURRENT_LIST_DIR}/old_header_host.c)
target_include_directories(abi_old_header_host PRIVATE ${CMAKE_CURRENT_LIST_DIR}/old)
target_link_libraries(abi_old_header_host PRIVATE $<TARGET_FILE:mixp>)
add_dependencies(abi_old_header_host mixp)
target_compile_options(abi_old_header_host PRIVATE -Wall -Wextra)
set_target_properties(abi_old_header_host PROPERTIES C_STANDARD 99 C_STANDARD_REQUIRED ON
  BUILD_RPATH $<TARGET_FILE_DIR:mixp>)
file(MAKE_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/abi_old_header_host_files)
add_test(NAME abi_old_header_host_0_2
  COMMAND abi_old_header_host ${CMAKE_CURRENT_BINARY_DIR}/abi_old_header_host_files)
set_tests_properties(abi_old_header_host_0_2 PROPERTIES TIMEOUT 300 ENVIRONMENT "${MIXP_TEST_ENV}")
