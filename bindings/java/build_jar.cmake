# Compiles the SWIG-generated raw classes (whose file names are known only
# after SWIG ran) with the hand-written org.mixp classes and packs mixp.jar,
# with the native libraries as resources (org/mixp/native/linux-x86_64/:
# libmixp.so.0, libmixp_jni.so, libmixp_cuda.so and libmixp_mpi.so when built) that
# NativeLoader extracts when it finds no library on the host.
# -D: JAVAC, JAR, RAW_DIR, SRC_DIR, CLASSES, OUT, NATIVE (a comma-separated
#     list of "file|name in the jar" pairs; missing files are left out)
file(GLOB raw ${RAW_DIR}/*.java)
file(GLOB_RECURSE src ${SRC_DIR}/*.java)
file(REMOVE_RECURSE ${CLASSES})
file(MAKE_DIRECTORY ${CLASSES})
execute_process(COMMAND ${JAVAC} -Xlint:all -Werror -encoding UTF-8 --release 11
                        -d ${CLASSES} ${raw} ${src}
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "javac failed (${rc})")
endif()
set(native_dir ${CLASSES}/org/mixp/native/linux-x86_64)
file(MAKE_DIRECTORY ${native_dir})
string(REPLACE "," ";" native_pairs "${NATIVE}")
foreach(pair ${native_pairs})
  if(pair STREQUAL "")
    continue()
  endif()
  string(REPLACE "|" ";" pair "${pair}")
  list(GET pair 0 from)
  list(GET pair 1 name)
  if(EXISTS ${from})
    file(COPY_FILE ${from} ${native_dir}/${name})
  endif()
endforeach()
execute_process(COMMAND ${JAR} --create --file ${OUT} -C ${CLASSES} . RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "jar failed (${rc})")
endif()
