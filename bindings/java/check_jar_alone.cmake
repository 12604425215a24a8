# `java -cp mixp.jar` with nothing else: a copy of the jar alone in WORK and
# java.library.path pointing nowhere, so NativeLoader must extract and load
# the libraries the jar carries; then the quickstart trains with them.
#   cmake -DJAVA=java -DJAR=mixp.jar -DAPPS=classes-dir -DWORK=dir -P check_jar_alone.cmake
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
file(COPY_FILE ${JAR} ${WORK}/mixp.jar)
execute_process(COMMAND ${JAVA} -Djava.library.path=${WORK}/nowhere -cp ${WORK}/mixp.jar org.mixp.NativeLoader
                OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT out MATCHES "loaded from [^\n]*\\(extracted from the jar\\)")
  message(FATAL_ERROR "the jar alone did not load its own libraries (exit ${rc}):\n${out}${err}")
endif()
message("${out}")
execute_process(COMMAND ${JAVA} -Djava.library.path=${WORK}/nowhere -cp ${WORK}/mixp.jar:${APPS} Quickstart
                OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT out MATCHES "epoch 3: mean loss")
  message(FATAL_ERROR "the quickstart did not train from the jar alone (exit ${rc}):\n${out}${err}")
endif()
message("${out}")
