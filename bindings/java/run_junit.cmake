# Compiles the JUnit 5 tests against mixp.jar and runs them with the console
# launcher, with the JVM checking every JNI call (-Xcheck:jni).
# -D: JAVAC, JAVA, JAR, JUNIT, CLASSES, SOURCES, README, EXAMPLE
file(REMOVE_RECURSE ${CLASSES})
file(MAKE_DIRECTORY ${CLASSES})
execute_process(COMMAND ${JAVAC} -Xlint:all,-try -Werror --release 11 -encoding UTF-8
                        -cp ${JAR}:${JUNIT} -d ${CLASSES} ${SOURCES}
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "javac of the tests failed (${rc})")
endif()
execute_process(COMMAND ${JAVA} -Xcheck:jni -Dmixp.readme=${README} -Dmixp.example=${EXAMPLE}
                        -jar ${JUNIT} --disable-banner --disable-ansi-colors --details=tree --fail-if-no-tests
                        --class-path ${JAR}:${CLASSES} --select-package org.mixp
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "JUnit: tests failed (${rc})")
endif()
