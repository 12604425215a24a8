# Compiles the SWIG-generated raw classes (whose file names are known only
# after SWIG ran) with the hand-written org.mixp classes and packs mixp.jar.
# -D: JAVAC, JAR, RAW_DIR, SRC_DIR, CLASSES, OUT
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
execute_process(COMMAND ${JAR} --create --file ${OUT} -C ${CLASSES} . RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "jar failed (${rc})")
endif()
