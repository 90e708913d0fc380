# cmake -P: configure, build and run tests/install/consumer against an install
# prefix. -DSOURCE -DBUILD -DPREFIX -DCXX -DGENERATOR -DWANT_VERSION -DMODEL
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}")
  endif()
endfunction()

file(REMOVE_RECURSE ${BUILD})
run(${CMAKE_COMMAND} -S ${SOURCE} -B ${BUILD} -G ${GENERATOR}
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=${CXX}
    -DCMAKE_PREFIX_PATH=${PREFIX} -DEXPECTED_PREFIX=${PREFIX} -DWANT_VERSION=${WANT_VERSION}
    -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF)
run(${CMAKE_COMMAND} --build ${BUILD})
run(${BUILD}/consumer ${MODEL})
