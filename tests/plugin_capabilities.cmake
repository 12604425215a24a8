# A device that declines every optional backend capability (included from
# tests/CMakeLists.txt): the bare device plugin stands in for the CUDA
# plugin, so the callers' fallbacks and refusals run everywhere, with no GPU
# and no CUDA (tests/c/test_plugin_capabilities.c).
add_library(mixp_bare_device_plugin MODULE ${CMAKE_CURRENT_SOURCE_DIR}/plugin/bare_device_plugin.cpp)
target_include_directories(mixp_bare_device_plugin PRIVATE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/include)
target_compile_features(mixp_bare_device_plugin PRIVATE cxx_std_20)
target_compile_options(mixp_bare_device_plugin PRIVATE -Wall -Wextra)
set_target_properties(mixp_bare_device_plugin PROPERTIES CXX_VISIBILITY_PRESET hidden)
if(TARGET test_plugin_capabilities)
  add_dependencies(test_plugin_capabilities mixp_bare_device_plugin)
  target_compile_definitions(test_plugin_capabilities PRIVATE
    MIXP_TEST_BARE_PLUGIN="$<TARGET_FILE:mixp_bare_device_plugin>")
endif()
