# The loader's op-table check against a fake CUDA plugin (included from
# tests/CMakeLists.txt): builds everywhere, needs no GPU and no CUDA.
add_library(mixp_fake_cuda_plugin MODULE ${CMAKE_CURRENT_SOURCE_DIR}/plugin/fake_cuda_plugin.cpp)
target_include_directories(mixp_fake_cuda_plugin PRIVATE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/include)
target_compile_features(mixp_fake_cuda_plugin PRIVATE cxx_std_20)
set_target_properties(mixp_fake_cuda_plugin PROPERTIES CXX_VISIBILITY_PRESET hidden)
if(TARGET test_plugin_table)
  add_dependencies(test_plugin_table mixp_fake_cuda_plugin)
  target_compile_definitions(test_plugin_table PRIVATE
    MIXP_TEST_FAKE_PLUGIN="$<TARGET_FILE:mixp_fake_cuda_plugin>")
endif()
