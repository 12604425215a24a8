# Checks of the code's shape (included from tests/CMakeLists.txt): includes
# point down the layers, and every op of the table is tested and bound.

add_test(NAME layering_includes
  COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/layering/check_includes.py ${PROJECT_SOURCE_DIR})
add_test(NAME layering_includes_self_test
  COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/layering/check_includes.py --self-test)
add_test(NAME op_table_coverage
  COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/ops/check_op_coverage.py ${PROJECT_SOURCE_DIR})
add_test(NAME op_table_coverage_self_test
  COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/ops/check_op_coverage.py --self-test)
# One concept per room: no file of src/ or kernels/ over 500 lines, no
# function over 80 (the exceptions, each with its reason, are in the script).
add_test(NAME house_sizes
  COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/layering/check_sizes.py ${PROJECT_SOURCE_DIR})
add_test(NAME house_sizes_self_test
  COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/layering/check_sizes.py --self-test)
